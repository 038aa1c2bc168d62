from lanes.cli.main import main

raise SystemExit(main())

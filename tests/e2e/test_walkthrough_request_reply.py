"""The seeds' sync-over-async pattern with the CLI: a requester assigns itself every partition of
``responses`` at the end offsets (a free consumer: no group), sends requests tagged with a UUID to
``requests``; a responder group answers each on ``responses`` keyed by that UUID; the requester
picks out its responses by id within a deadline, and never sees responses from before it started."""

from __future__ import annotations

import queue
import threading
import time
import uuid

from tests.e2e.cli import Workdir, stop, wait_for

DEADLINE_S = 30


def test_requests_are_answered_by_id(lanes: Workdir) -> None:
    lanes.ok("topics", "create", "requests", "--partitions", "3", "--replication-factor", "2")
    lanes.ok("topics", "create", "responses", "--partitions", "3", "--replication-factor", "2")
    stale = str(uuid.uuid4())
    lanes.ok("produce", "responses", "--key-separator", ":", input=f"{stale}:an answer nobody waits for\n")
    responders = [
        lanes.start(
            "lanes consume requests --group responder --follow --format '%k:answer to %v' "
            "| lanes produce responses --key-separator :"
        )
        for _ in range(2)
    ]
    requester = lanes.start("lanes consume responses --from latest --follow --verbose --format '%k %v'")
    try:
        assert requester.stderr is not None
        assert requester.stdout is not None
        positioned = requester.stderr.readline()  # printed once every partition is at its end offset
        assert positioned.startswith("reading responses partitions 0 at"), positioned
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in requester.stdout], daemon=True).start()  # type: ignore[union-attr]

        asked = {str(uuid.uuid4()): f"quote {ticker}" for ticker in ("AAPL", "MSFT", "IBM")}
        sent_at = time.monotonic()
        lanes.ok("produce", "requests", "--key-separator", ":", input="".join(f"{k}:{v}\n" for k, v in asked.items()))
        answers: dict[str, str] = {}
        while set(answers) != set(asked):
            remaining = DEADLINE_S - (time.monotonic() - sent_at)
            assert remaining > 0, f"no response within {DEADLINE_S} s for {set(asked) - set(answers)}"
            request_id, _, answer = lines.get(timeout=remaining).rstrip("\n").partition(" ")
            assert request_id != stale, "the requester started at the end offsets; it must not see older responses"
            if request_id in asked:
                answers[request_id] = answer
        assert answers == {k: f"answer to {v}" for k, v in asked.items()}
    finally:
        stop(requester)
        for responder in responders:
            stop(responder)
    groups = wait_for(lambda: lanes.json("groups", "list"), "the responder group to be listed")
    assert [g["group_id"] for g in groups if g["group_id"] == "responder"] == ["responder"]
    assert not any("responses" in g["group_id"] for g in groups)  # the requester is a free consumer

"""The group coordinator service: consumer groups and committed offsets (DESIGN.md section 8)."""

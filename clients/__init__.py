"""clients room (see DESIGN.md)."""

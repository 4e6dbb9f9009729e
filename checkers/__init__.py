"""checkers room (see DESIGN.md)."""

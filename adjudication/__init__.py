"""adjudication room (see DESIGN.md)."""

"""index room (see docs/design.md): the offline bibliographic index, its dump readers and builder."""

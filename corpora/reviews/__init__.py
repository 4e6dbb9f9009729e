"""Review-hallucination audits (HalluPeer's tasks): review records, ingest, segmentation, injection."""

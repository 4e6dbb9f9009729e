"""Corpora: loaders (HALLMARK JSONL, BibTeX), taxonomies as data, generators, sample corpora."""

from corpora.loaded_corpus import LoadedCorpus, LoadError


def load_corpus(path: str, fmt: str = "auto", corpus: str | None = None, split: str | None = None) -> LoadedCorpus:
    """Load a corpus file by format: `hallmark` (JSONL), `bibtex`, or `auto` (by extension)."""
    from corpora.citations.bibtex import load_bibtex
    from corpora.citations.hallmark import load_hallmark_jsonl

    if fmt == "auto":
        fmt = "bibtex" if path.endswith(".bib") else "hallmark"
    if fmt == "hallmark":
        return load_hallmark_jsonl(path, corpus=corpus, split=split)
    if fmt == "bibtex":
        return load_bibtex(path, corpus=corpus, split=split)
    raise ValueError(f"unknown corpus format '{fmt}': use hallmark, bibtex or auto")


__all__ = ["LoadError", "LoadedCorpus", "load_corpus"]

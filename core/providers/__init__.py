"""Providers: embedders, extractors and summarizers behind small protocols."""

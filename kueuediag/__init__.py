"""kueuediag: answers "why is my Kueue workload pending?" with a ranked, evidence-backed verdict."""

__version__ = "0.1.0"

"""Fleet health: the whole cluster at once, for CI gates and on-call (`kueuediag health`).

One engine pass over a shared Snapshot reuses every analysis and every owning check; see docs/health.md.
"""

"""The domain of fitguard, pure: quantities, pod requests, node group templates, the fit check,
instance facts, branch ENI accounting and the scale-up planner. No I/O, no clock, no globals
beyond immutable data read once from the package."""

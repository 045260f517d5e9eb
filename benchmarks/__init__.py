"""Side-by-side benchmarks: Ember and PyTorch on the same work, in one run, as ratios."""

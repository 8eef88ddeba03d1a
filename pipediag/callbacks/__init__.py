"""Callbacks that diagnose inside the user's own training loop (Keras `fit`), without a second run."""

"""`pipediag run SCRIPT`: the user's unmodified training script run as `__main__`, with its
tf.data iteration (custom loops, `strategy` distributed datasets, Keras 3 `fit`) observed, then
swapped for measured windows (synthetic, input-only, tuned) inside the real loop, and concluded
into the same Diagnosis `pipediag diagnose` gives.

    launch (runpy) ─▶ hooks (Dataset.__iter__, distributed datasets, Model.fit) ─▶ taps
        ─▶ observe (the real steps) ─▶ swap (the windows, fed to the paused loop) ─▶ result
"""

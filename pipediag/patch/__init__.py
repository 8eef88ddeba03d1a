"""The tuned pipeline outside pipediag: the measured changes as edits of the user's builder source (`source`, libcst)
and the proof that the patched builder runs as fast (`prove`).
"""

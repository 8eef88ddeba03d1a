"""The tuned pipeline outside pipediag: which measured changes to carry over (`selection`), the
same changes as edits of the user's builder source (`source`, libcst: comments and formatting
stay), and the proof that a patched builder has the tuned stages and runs as fast (`prove`)."""

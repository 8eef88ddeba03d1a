"""The modes pipediag runs: synthetic, pipeline, input_only and tuned (see `plan`)."""

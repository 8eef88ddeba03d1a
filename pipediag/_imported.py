"""When pipediag was first imported in this process: the start of its own run where the process
ran something else before it became Python (samples.cpu.process_age_s)."""

import time

IMPORTED_S = time.time()

"""pipediag: why is my GPU idle, and what exactly do I change?

    import pipediag
    diagnosis = pipediag.diagnose(make_dataset, model=model)
    print(diagnosis.verdict.bottleneck, [f.title for f in diagnosis.fixes])

Importing pipediag does not import TensorFlow; `diagnose()` does, when it runs.
"""

from pipediag._version import __version__
from pipediag.api import diagnose
from pipediag.diagnosis import Diagnosis, read_json
from pipediag.errors import PipediagError, UsageError, UserCodeError
from pipediag.modes.runner import StopRule

__all__ = ["__version__", "diagnose", "Diagnosis", "read_json", "StopRule", "PipediagError", "UsageError", "UserCodeError"]

"""The bottom floor: frozen record types and the JSON file helpers; they import only stats, errors, oom and _version."""

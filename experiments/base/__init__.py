"""The floor every other package stands on: one-line errors, the name registry, process-wide
settings, the private-API fallback warning."""

"""What one run's metric rows say: why it stopped (stopping), its stability figures (stability),
its outcome class and endpoints (outcome). Pure Python and NumPy."""

"""Model training: trainers that run on the CPU (small, named budgets) or a GPU."""

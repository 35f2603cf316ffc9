"""Non-DP query obfuscation baselines of paper 001's comparison: AED (Arampatzis et al. 2011) and FSH
(Froebe et al. 2021)."""

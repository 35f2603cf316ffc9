"""Non-DP query obfuscation baselines of Faggioli & Ferro's comparison: AED (Arampatzis et al. 2011) and FSH
(Froebe et al. 2021)."""

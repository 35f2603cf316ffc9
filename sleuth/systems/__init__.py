"""sleuth's four systems, each a package that holds everything of that system (index and model code, stages,
pipeline builders and YAML, data builders, training, evaluation, CLI group, README).

``SYSTEMS`` is the explicit tuple the ``sleuth.systems`` entry point names (:mod:`sleuth.plugins`).
"""

from sleuth.systems import chain_of_skills, dhr, private_search, quest

SYSTEMS = (dhr.SYSTEM, chain_of_skills.SYSTEM, quest.SYSTEM, private_search.SYSTEM)

__all__ = ["SYSTEMS"]

"""Mutation testing of the workflow's definition: ``python -m idemflow.mutants`` (``make mutants``).

Every guard of the workflow lives in its state machine definition: DynamoDB condition clauses, ``Catch``
and ``Retry`` entries, ``Choice`` rules. A test suite that still passes after one of them is deleted does
not pin that guard down. The two halves are modules of their own: :mod:`~idemflow.mutants.generate` makes
the mutants (a pure function of the definition), :mod:`~idemflow.mutants.campaign` runs the project's
tests against each in a throw-away copy of the project and judges them; :mod:`~idemflow.mutants.config`
reads what the project declares (its definition, test selection and equivalence file); :mod:`~idemflow.mutants.errors`
holds the exceptions a caller catches. A survivor that
cannot be killed (the deleted guard is redundant by construction) is explained in the equivalence file,
an object mapping mutant id to a one-sentence reason.
"""

from idemflow.mutants.errors import MutantsConfigError, MutantsError
from idemflow.mutants.generate import (
    ClauseDeletion,
    Generation,
    JsonObject,
    Mutant,
    NotMutable,
    clause_deletions,
    generate,
    generate_mutants,
    render_definition,
    split_clauses,
)

__all__ = [
    "ClauseDeletion",
    "Generation",
    "JsonObject",
    "Mutant",
    "MutantsConfigError",
    "MutantsError",
    "NotMutable",
    "clause_deletions",
    "generate",
    "generate_mutants",
    "render_definition",
    "split_clauses",
]

"""Every path of the state machine, on the embedded engine, from the real templates and definition.

Each module runs once per side effect (tests/functional/side_effects.py): one that guards itself and one
that does not. Each test asserts the execution's outcome, the idempotency record's final state, how many
times the side effect's handler ran (the local Lambda runtime counts them) and how many effects it left
for the key (in its own table).
"""

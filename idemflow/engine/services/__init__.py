"""The AWS services the embedded engine serves, one package each, as moto keeps one folder per service.

A service's package holds everything about it: what it serves (``service.py``, its :class:`~.base.Service`),
every change the engine makes to moto's code for it (fixes, speedups, hooks: each listed in
``idemflow/engine/registry.py``) and its runtime (the Lambda workers under ``lambda_``). A package's
``__init__`` imports nothing, so that a Lambda worker can import its own module without the others. The list
of services the engine runs is ``idemflow/engine/catalog.py``.
"""

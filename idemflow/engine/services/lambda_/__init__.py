"""Lambda: the functions (``service``), the local runtime that runs their handlers (``runtime``, with the
``forkserver`` and each ``worker``) and moto's Invoke sent to it (``invoke``).
"""

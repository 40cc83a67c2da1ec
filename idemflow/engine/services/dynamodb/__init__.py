"""DynamoDB: the tables (``service``), atomic conditional writes (``atomic_writes``), the expression caches
(``speedups``) and the engine's reading of its tables (``tables``).
"""

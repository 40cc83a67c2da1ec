"""SQS: the queues (``service``), message sizes as AWS counts them (``message_size``), message move tasks
(``move_tasks``) and queues deleted and created again (``recreated_queues``).
"""

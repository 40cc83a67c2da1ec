"""EventBridge Pipes: a pipe from an SQS queue or a Kinesis stream to a state machine, its poller run by the
engine's background owner. What a pipe does is EventBridge's (user guide pages cited where each applies).

From a queue:

* it polls the queue for batches of up to ``BatchSize`` records, waiting up to ``MaximumBatchingWindowInSeconds``
  for a fuller one (eb-pipes-sqs; the window is scaled by the engine's ``wait_time_scale``), and sends a batch
  before "the invocation payload size quota is reached" (eb-pipes-sqs): a Step Functions target's whole batch
  is at most 262,144 (eb-pipes-batching-concurrency), so the records received are sent as consecutive batches
  that each fit, and a record that alone does not is refused by the target and stays on the queue;
* each record has the SQS source's shape (eb-pipes-sqs) and goes through the target's ``InputTemplate`` one by
  one (eb-pipes-input-transformation, eb-pipes-batching-concurrency);
* a Step Functions target receives the whole batch as one JSON array, even a batch of one
  (eb-pipes-batching-concurrency); ``FIRE_AND_FORGET`` starts an execution (StartExecution), ``REQUEST_RESPONSE``
  runs an Express workflow (StartSyncExecution) and is refused for a Standard one (PipeTargetStateMachineParameters);
* a batch is deleted from the queue when the target took it; a failed batch is left, and comes back when its
  visibility timeout ends, until the queue's redrive policy moves it to the dead-letter queue; a synchronous
  target's ``{"batchItemFailures": [{"itemIdentifier": <messageId>}]}`` leaves only those records
  (eb-pipes-batching-concurrency, partial batch failure);
* the pipe is in moto's Pipes backend as CloudFormation made it: ``ListPipes`` and ``DescribePipe`` answer for
  it, and after ``StopPipe`` its poller reads nothing until ``StartPipe`` (Amazon EventBridge Pipes API
  reference); a template's ``DesiredState: STOPPED`` starts it stopped.

From a Kinesis stream: each shard in order, a batch at a time, retried and then described on the dead-letter
destination (:mod:`.stream`).

Under its role: the source's permissions checked when the pipe is created, the target's at each start
(:mod:`.role`).

In one place: the pipe as the template declares it (:mod:`.models`), a record through the input template and
records into batches (:mod:`.transform`), the pollers (:mod:`.queue`, :mod:`.stream`), the role (:mod:`.role`),
the service (:mod:`.service`).
"""

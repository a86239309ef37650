-- 0017_failure_class_check.sql - an attempt's failure class is one of
-- lib/job/failure.def's classes, or '' (none: it runs, it succeeded, or it was
-- not followed). failure.def is the one list; tests/unit/test_failure.c
-- fails when the names below and its rows differ either way, so a class
-- added there comes with a migration that recreates this constraint.
--
-- Before it, the API kept a followed attempt's reason as its class when
-- the reason was any [a-z_]{1,40} word, and the scheduler retried a class
-- it did not know in the same configuration. Such rows become 'failed',
-- the class the API now gives a reason that names none, whose rule is
-- that same retry. The job events that told those attempts' story keep
-- the word they recorded.

UPDATE job_attempts SET failure_class = 'failed'
 WHERE failure_class NOT IN ('', 'ok', 'internal', 'usage', 'invalid_config', 'out_of_memory',
        'comm_failure', 'data_error', 'numerical_failure', 'checkpoint_corrupt', 'stopped',
        'attempt_over', 'rank_lost', 'launch_failed', 'node_failure', 'timeout', 'preempted',
        'failed', 'hang', 'lost', 'submit_rejected', 'storage_quota_exceeded', 'cancelled');

ALTER TABLE job_attempts
    ADD CONSTRAINT job_attempts_failure_class_check CHECK (failure_class IN ('',
        'ok', 'internal', 'usage', 'invalid_config', 'out_of_memory', 'comm_failure',
        'data_error', 'numerical_failure', 'checkpoint_corrupt', 'stopped', 'attempt_over',
        'rank_lost', 'launch_failed', 'node_failure', 'timeout', 'preempted', 'failed', 'hang',
        'lost', 'submit_rejected', 'storage_quota_exceeded', 'cancelled'));

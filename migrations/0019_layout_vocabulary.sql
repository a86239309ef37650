-- 0019_layout_vocabulary.sql - one vocabulary for a parallel layout: the
-- names of lib/job/layout.h (data_parallel, tensor_parallel, pipeline_parallel,
-- zero_stage, micro_batch, grad_accum), as the job spec has them.
--
-- The worker runtime's fallback events (worker/driver.c, stored by
-- api/h_attempts.c as job_events rows whose detail.kind is 'fallback')
-- named the layouts they fell back from and to with dp, tp, pp and zero.
-- This rewrites detail.from and detail.to of those rows to the long names;
-- their other members (micro_batch, grad_accum, ranks) keep theirs. A row
-- that already has the long names is left alone, so running it again
-- changes nothing. The audit log's copy of each event is not rewritten:
-- its records are immutable and hashed (0006). Nor are the sealed logs on
-- disk, which the database does not hold.
UPDATE job_events e
SET detail = e.detail || coalesce((
    SELECT jsonb_object_agg(side, ((e.detail->side) - ARRAY['dp', 'tp', 'pp', 'zero'])
        || jsonb_strip_nulls(jsonb_build_object(
            'data_parallel', e.detail->side->'dp',
            'tensor_parallel', e.detail->side->'tp',
            'pipeline_parallel', e.detail->side->'pp',
            'zero_stage', e.detail->side->'zero')))
    FROM unnest(ARRAY['from', 'to']) AS side
    WHERE jsonb_typeof(e.detail->side) = 'object'), '{}')
WHERE e.detail->>'kind' = 'fallback'
    AND (jsonb_typeof(e.detail->'from') = 'object'
            AND e.detail->'from' ?| ARRAY['dp', 'tp', 'pp', 'zero']
        OR jsonb_typeof(e.detail->'to') = 'object'
            AND e.detail->'to' ?| ARRAY['dp', 'tp', 'pp', 'zero']);

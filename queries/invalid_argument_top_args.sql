-- The most frequent argument key=value pairs of INVALID_ARGUMENT calls per
-- tool and bucket (@step_s seconds from @origin_s), at most @per_bucket per
-- bucket: the values that a bad schema or a renamed enum makes models send.
SELECT
  tool AS tool_name,
  @origin_s + intDiv(toInt64(toUInt32(ts)) - @origin_s, @step_s) * @step_s AS bucket_s,
  k AS arg_key,
  v AS arg_value,
  count() AS n
FROM calls FINAL
ARRAY JOIN arg_keys AS k, arg_values AS v
WHERE ts >= toDateTime(@from_s, 'UTC') AND ts <= toDateTime(@to_s, 'UTC')
  AND ts_ms >= @from_ms AND ts_ms < @to_ms
  AND (@tenant = '' OR tenant = @tenant)
  AND (@server = '' OR server = @server)
  AND (@tool = '' OR tool = @tool)
  AND category = 'INVALID_ARGUMENT'
GROUP BY tool_name, bucket_s, arg_key, arg_value
ORDER BY tool_name, bucket_s, n DESC, arg_key, arg_value
LIMIT @per_bucket BY tool_name, bucket_s

-- calls_5m_classes_failed_mv (migration 018) feeds calls_5m_classes now.
DROP TABLE IF EXISTS calls_5m_classes_mv

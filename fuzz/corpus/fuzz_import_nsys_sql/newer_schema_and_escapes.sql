UPDATE META_DATA_EXPORT SET value = '9' || char(27) || '[2J' || char(155) WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR';
INSERT INTO StringIds VALUES (4, char(27) || ']0;title' || char(7));
UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 4;

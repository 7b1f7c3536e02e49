PRAGMA writable_schema = ON;
UPDATE sqlite_master SET sql = 'CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value' || char(10) || char(27) || '[2J' WHERE name = 'StringIds';

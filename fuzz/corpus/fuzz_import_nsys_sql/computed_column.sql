DROP TABLE StringIds;
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT AS (printf('%.*c', 1000000, 'x')) VIRTUAL);
INSERT INTO StringIds(id) VALUES (1), (2), (3);

-- The privilege matrix (issue 27 B): a superuser (:su), two ordinary roles (alice,
-- bob) and a third (carol), every statement kind against owned, granted and
-- ungranted objects. Run through psql against Strata and PostgreSQL 15; every
-- statement's output must be the same (privileges.rs).
\set VERBOSITY terse
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
CREATE TABLE su_t (a int, b text);
INSERT INTO su_t VALUES (1, 'one');
CREATE SEQUENCE su_s;
GRANT CREATE ON SCHEMA public TO alice, bob;
-- An ordinary role owns what it creates and may do anything to it.
\c - alice
SELECT current_user, session_user;
CREATE TABLE a_t (a int PRIMARY KEY, b text);
INSERT INTO a_t VALUES (1, 'x'), (2, 'y');
CREATE SEQUENCE a_s;
SELECT nextval('a_s');
UPDATE a_t SET b = 'w' WHERE a = 2;
SELECT a, b FROM a_t ORDER BY a;
CREATE INDEX a_t_b ON a_t (b);
ALTER TABLE a_t ADD COLUMN c int;
ALTER TABLE a_t DROP COLUMN c;
-- Ungranted: every kind is refused.
SELECT * FROM su_t;
SELECT count(*) FROM su_t;
INSERT INTO su_t VALUES (2, 'two');
UPDATE su_t SET b = 'x';
DELETE FROM su_t;
TRUNCATE su_t;
DROP TABLE su_t;
ALTER TABLE su_t ADD COLUMN c int;
ALTER TABLE su_t RENAME TO su_t2;
CREATE INDEX ON su_t (a);
SELECT nextval('su_s');
SELECT setval('su_s', 10);
SELECT * FROM su_s;
DROP SEQUENCE su_s;
VACUUM su_t;
CHECKPOINT;
SHOW data_directory;
SET log_statement = 'all';
CREATE DATABASE adb;
CREATE TABLESPACE ats LOCATION '/nonexistent/strata-privileges';
CREATE ROLE dave;
ALTER ROLE bob CREATEDB;
ALTER ROLE bob PASSWORD NULL;
ALTER ROLE alice PASSWORD NULL;
SET ROLE bob;
GRANT bob TO carol;
-- Granted: table, column and sequence privileges.
\c - :su
GRANT SELECT ON su_t TO alice;
GRANT INSERT (a) ON su_t TO alice;
GRANT UPDATE (b), REFERENCES (a) ON su_t TO bob;
GRANT USAGE ON SEQUENCE su_s TO alice;
GRANT TRUNCATE ON su_t TO bob;
GRANT SELECT ON su_s TO bob;
\c - alice
SELECT a, b FROM su_t ORDER BY a;
INSERT INTO su_t (a) VALUES (2);
INSERT INTO su_t (a, b) VALUES (3, 'three');
INSERT INTO su_t VALUES (4, 'four');
INSERT INTO su_t (a) VALUES (5) RETURNING a;
UPDATE su_t SET b = 'z';
DELETE FROM su_t WHERE a = 2;
SELECT nextval('su_s');
SELECT currval('su_s');
SELECT setval('su_s', 10);
\c - bob
SELECT a FROM su_t;
SELECT count(*) FROM su_t;
UPDATE su_t SET b = 'bob';
UPDATE su_t SET b = 'bob' WHERE a = 1;
UPDATE su_t SET a = 9;
SELECT last_value FROM su_s;
SELECT nextval('su_s');
TRUNCATE su_t;
-- Grants by an owner, grant options, and their cascade.
SELECT * FROM a_t;
\c - alice
GRANT SELECT ON a_t TO bob;
GRANT ALL ON su_t TO bob;
GRANT SELECT ON su_t TO carol;
GRANT SELECT ON a_s TO bob;
\c - bob
SELECT a, b FROM a_t ORDER BY a;
UPDATE a_t SET b = 'v';
GRANT SELECT ON a_t TO carol;
\c - alice
GRANT SELECT, UPDATE ON a_t TO bob WITH GRANT OPTION;
\c - bob
GRANT SELECT, UPDATE ON a_t TO carol;
GRANT UPDATE, DELETE ON a_t TO carol;
UPDATE a_t SET b = 'u';
\c - carol
SELECT a, b FROM a_t ORDER BY a;
\c - alice
REVOKE SELECT ON a_t FROM bob;
REVOKE GRANT OPTION FOR SELECT ON a_t FROM bob;
REVOKE SELECT ON a_t FROM bob CASCADE;
\c - carol
SELECT a FROM a_t;
UPDATE a_t SET b = 't';
\c - bob
SELECT a FROM a_t;
-- DDL is the owner's; owners change.
DROP TABLE a_t;
ALTER TABLE a_t RENAME TO b_t;
CREATE INDEX ON a_t (a);
DROP INDEX a_t_b;
DROP SEQUENCE a_s;
\c - alice
ALTER TABLE a_t OWNER TO bob;
\c - :su
GRANT bob TO alice;
\c - alice
ALTER TABLE a_t OWNER TO bob;
ALTER SEQUENCE a_s OWNER TO bob;
DROP INDEX a_t_b;
\c - bob
ALTER TABLE a_t RENAME COLUMN b TO bb;
SELECT a, bb FROM a_t ORDER BY a;
-- Databases: CREATEDB, ownership, CONNECT.
\c - :su
ALTER ROLE alice CREATEDB;
\c - alice
CREATE DATABASE adb;
\c - bob
DROP DATABASE adb;
\c - alice
DROP DATABASE adb;
-- Roles: CREATEROLE, superuser attributes, membership.
\c - :su
ALTER ROLE alice CREATEROLE;
\c - alice
CREATE ROLE dave;
CREATE ROLE eve SUPERUSER;
ALTER ROLE dave CREATEDB LOGIN CONNECTION LIMIT 3;
ALTER ROLE dave SUPERUSER;
ALTER ROLE dave REPLICATION;
GRANT dave TO carol;
GRANT dave TO carol;
REVOKE dave FROM carol;
REVOKE dave FROM carol;
ALTER ROLE dave RENAME TO dave2;
DROP ROLE dave2;
DROP ROLE IF EXISTS dave2;
DROP ROLE alice;
\c - bob
ALTER ROLE bob PASSWORD NULL;
ALTER ROLE carol PASSWORD NULL;
ALTER ROLE bob NOLOGIN;
SET ROLE carol;
\c - :su
GRANT carol TO bob;
\c - bob
SET ROLE carol;
SELECT current_user, session_user, current_role;
CREATE TABLE c_t (a int);
RESET ROLE;
SELECT current_user;
-- The superuser: everything, and what depends on roles.
\c - :su
DROP ROLE carol;
REASSIGN OWNED BY bob TO alice;
\c - alice
SELECT a, bb FROM a_t ORDER BY a;
DROP TABLE a_t;
\c - :su
DROP OWNED BY carol;
DROP ROLE carol;
REVOKE ALL ON su_t FROM alice, bob;
REVOKE ALL ON su_t FROM bob;
REVOKE USAGE ON SEQUENCE su_s FROM alice;
REVOKE SELECT ON su_s FROM bob;
REVOKE CREATE ON SCHEMA public FROM alice, bob;
DROP OWNED BY alice;
DROP ROLE alice, bob;
SELECT count(*) FROM su_t;

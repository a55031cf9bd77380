-- Projects: a group of users, each a member (launch, cancel and read the project's jobs and
-- datasets) or a viewer (read), which owns jobs and datasets. Every user has a personal
-- project, the default, whose id is the user's own: existing jobs and data files are in
-- their owner's.
CREATE TABLE projects (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
);
CREATE TABLE project_members (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_by_user ON project_members (user_id);
ALTER TABLE jobs ADD COLUMN project_id TEXT;
UPDATE jobs SET project_id = owner_id;
CREATE INDEX jobs_by_project ON jobs (project_id, id);
ALTER TABLE data_files ADD COLUMN project_id TEXT;
UPDATE data_files SET project_id = owner_id;

// Package store keeps the bot's durable state in SQLite: webhook deliveries,
// the jobs they become, the runs a job makes and each run's attempts.
//
// Domain types live at the package root; DB is the only implementation. All
// times are stored as UTC and returned in UTC.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNotFound is returned, wrapped, when a requested row does not exist.
var ErrNotFound = errors.New("not found")

//go:embed migrations/*.sql
var migrationFS embed.FS

// timeFormat is fixed-width so that stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// DB is a handle on the SQLite database. It is safe for concurrent use.
type DB struct {
	// Now returns the current time; it defaults to time.Now and may be
	// replaced before use (tests).
	Now func() time.Time

	db   *sql.DB
	path string
}

// Open opens (creating it and its parent folder if needed) the database at
// path and applies any pending migrations. It returns an error if the file
// cannot be opened or a migration fails.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	sqldb, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := &DB{Now: time.Now, db: sqldb, path: path}
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := db.migrate(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, nil
}

// dsn builds the modernc DSN; the pragmas apply to every pooled connection,
// and _txlock=immediate makes every transaction take the write lock at BEGIN,
// so concurrent writers wait on busy_timeout instead of failing mid-transaction.
func dsn(path string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + esc +
		"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
}

// Close closes the database. It returns the driver's error, if any.
func (db *DB) Close() error {
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// Path returns the file path the database was opened with.
func (db *DB) Path() string { return db.path }

// migrate applies each embedded migration not yet recorded in the migrations
// table, in name order, each in its own transaction.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.db.ExecContext(ctx,
		`CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

func (db *DB) migrateFile(ctx context.Context, name string) error {
	return db.withTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx,
			`SELECT count(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		body, err := fs.ReadFile(migrationFS, name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, name, formatTime(db.now()))
		return err
	})
}

// withTx runs fn in a transaction (BEGIN IMMEDIATE, per the DSN), committing
// when fn returns nil and rolling back otherwise.
func (db *DB) withTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (db *DB) now() time.Time {
	if db.Now == nil {
		return time.Now().UTC()
	}
	return db.Now().UTC()
}

// formatTime renders t for storage; the zero time becomes NULL.
func formatTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeFormat)
}

// parseTime reads a stored time; NULL or empty gives the zero time.
func parseTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", s.String, err)
	}
	return t.UTC(), nil
}

// nullInt64 stores 0 as NULL, for optional foreign keys.
func nullInt64(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// querier is satisfied by *sql.DB and *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// scanner is satisfied by *sql.Row and *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

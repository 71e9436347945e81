// A value a backend may return at once (SQLite) or later (PostgreSQL).

export type Awaitable<T> = T | Promise<T>;

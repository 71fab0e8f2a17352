/* SPDX-License-Identifier: MIT */
/*
 * core/conftext.c - the text of a configuration file, as libconfig parses it
 *
 * libconfig 1.5 parses well but forgets what it read, and it handles
 * @include in a way tally cannot use:
 *   - it prefixes every @include path with the include directory, absolute
 *     paths too, so @include "/etc/site.conf" never opens;
 *   - it keeps 32 bits of an integer written without the L suffix and
 *     drops the rest without a word (4294967296 reads as 0,
 *     99999999999999999999 as -1);
 *   - of a name defined twice in a group it says "duplicate setting name"
 *     and not which.
 * So tally reads each file itself, expands its @include directives into one
 * text (remembering the file and line every line came from), gives that
 * text to libconfig, and goes back to it for what libconfig lost: the
 * literal of a value and the name defined twice.
 *
 * The scanner below knows libconfig 1.5's lexical rules only as far as
 * these jobs need: comments, strings, punctuation, and "atoms" (names,
 * numbers, booleans). What libconfig refuses it need not understand: a
 * look-up in a text libconfig did not accept simply finds nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core-internal.h"

/* libconfig 1.5's own limit, so that nothing it would read is refused */
#define TEXT_MAX_INCLUDE_DEPTH 10
/* nothing sensible is this large; an include loop fanning out would be */
#define TEXT_MAX_BYTES (16u << 20)
/* deeper nesting than this is no configuration: look-ups give up */
#define TEXT_MAX_NESTING 64

enum tok_type {
	TOK_EOF,
	TOK_ATOM, /* a name, number or boolean */
	TOK_STRING,
	TOK_EQUALS, /* = or : */
	TOK_SEP,    /* ; */
	TOK_COMMA,
	TOK_GROUP_OPEN,
	TOK_GROUP_CLOSE,
	TOK_LIST_OPEN,	/* [ or ( */
	TOK_LIST_CLOSE, /* ] or ) */
	TOK_INCLUDE,	/* @include "path" at the start of a line */
	TOK_OTHER,
};

struct tok {
	enum tok_type type;
	const char *s; /* the token's text in the input */
	size_t len;
	int line; /* 1-based line of its first character */
	/* TOK_INCLUDE: the path (escapes still in), and the directive's end */
	const char *path;
	size_t path_len;
	const char *end;
};

struct lexer {
	const char *p, *end;
	int line;
	bool bol; /* only blanks since the start of the line */
};

static bool atom_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
	       ch == '*' || ch == '+' || ch == '-';
}

/* Skip blanks, newlines and comments; count lines. */
static void lex_skip(struct lexer *lx)
{
	while (lx->p < lx->end) {
		char ch = *lx->p;

		if (ch == ' ' || ch == '\t') {
			lx->p++;
		} else if (ch == '\n') {
			lx->p++;
			lx->line++;
			lx->bol = true;
		} else if (ch == '\r' || ch == '\f') {
			lx->p++;
			lx->bol = false;
		} else if (ch == '#' || (ch == '/' && lx->p + 1 < lx->end &&
					 lx->p[1] == '/')) {
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else if (ch == '/' && lx->p + 1 < lx->end &&
			   lx->p[1] == '*') {
			lx->p += 2;
			while (lx->p < lx->end &&
			       !(*lx->p == '*' && lx->p + 1 < lx->end &&
				 lx->p[1] == '/')) {
				if (*lx->p == '\n')
					lx->line++;
				lx->p++;
			}
			lx->p = lx->p < lx->end ? lx->p + 2 : lx->end;
			lx->bol = false;
		} else {
			return;
		}
	}
}

/* At '"': skip the string, its escapes and the newlines in it. */
static void lex_string(struct lexer *lx)
{
	for (lx->p++; lx->p < lx->end && *lx->p != '"'; lx->p++) {
		if (*lx->p == '\\' && lx->p + 1 < lx->end)
			lx->p++;
		if (*lx->p == '\n')
			lx->line++;
	}
	if (lx->p < lx->end)
		lx->p++;
}

static const char include_word[] = "@include";

/* libconfig 1.5: ^[ \t]*@include[ \t]+\" starts a directive. */
static bool lex_include(struct lexer *lx, struct tok *t)
{
	size_t n = sizeof(include_word) - 1;
	const char *q = lx->p + n;

	if (!lx->bol || (size_t)(lx->end - lx->p) <= n ||
	    memcmp(lx->p, include_word, n) || (*q != ' ' && *q != '\t'))
		return false;
	while (q < lx->end && (*q == ' ' || *q == '\t'))
		q++;
	if (q >= lx->end || *q != '"')
		return false;
	t->type = TOK_INCLUDE;
	t->path = ++q;
	while (q < lx->end && *q != '"' && *q != '\n') {
		if (*q == '\\' && q + 1 < lx->end &&
		    (q[1] == '\\' || q[1] == '"'))
			q++;
		q++;
	}
	t->path_len = (size_t)(q - t->path);
	if (q >= lx->end || *q != '"')
		t->type = TOK_OTHER; /* unterminated: libconfig's error */
	else
		q++;
	t->end = q;
	t->len = (size_t)(q - t->s);
	lx->p = q;
	return true;
}

static void lex_next(struct lexer *lx, struct tok *t)
{
	lex_skip(lx);
	t->line = lx->line;
	t->s = lx->p;
	t->len = 0;
	if (lx->p >= lx->end) {
		t->type = TOK_EOF;
		return;
	}
	if (*lx->p == '@' && lex_include(lx, t)) {
		lx->bol = false;
		return;
	}
	lx->bol = false;
	switch (*lx->p) {
	case '"':
		t->type = TOK_STRING;
		lex_string(lx);
		t->len = (size_t)(lx->p - t->s);
		return;
	case '=':
	case ':':
		t->type = TOK_EQUALS;
		break;
	case ';':
		t->type = TOK_SEP;
		break;
	case ',':
		t->type = TOK_COMMA;
		break;
	case '{':
		t->type = TOK_GROUP_OPEN;
		break;
	case '}':
		t->type = TOK_GROUP_CLOSE;
		break;
	case '[':
	case '(':
		t->type = TOK_LIST_OPEN;
		break;
	case ']':
	case ')':
		t->type = TOK_LIST_CLOSE;
		break;
	default:
		if (!atom_char(*lx->p)) {
			t->type = TOK_OTHER;
			break;
		}
		t->type = TOK_ATOM;
		while (lx->p < lx->end && atom_char(*lx->p))
			lx->p++;
		t->len = (size_t)(lx->p - t->s);
		return;
	}
	lx->p++;
	t->len = 1;
}

/* Reading files and expanding @include */

struct expand {
	struct tally_conf_text *t;
	size_t cap; /* allocated bytes of t->text */
	int line;   /* line of t->text being written, 1-based */
};

static int text_append(struct expand *x, const char *s, size_t len)
{
	if (x->t->len + len + 1 > TEXT_MAX_BYTES) {
		errno = EFBIG;
		return -1;
	}
	if (x->t->len + len + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 4096;
		char *v;

		while (cap < x->t->len + len + 1)
			cap *= 2;
		v = realloc(x->t->text, cap);
		if (!v)
			return -1;
		x->t->text = v;
		x->cap = cap;
	}
	memcpy(x->t->text + x->t->len, s, len);
	x->t->len += len;
	x->t->text[x->t->len] = '\0';
	for (size_t i = 0; i < len; i++)
		x->line += s[i] == '\n';
	return 0;
}

/* From here on, lines of the text come from @file's line @line. */
static int text_span(struct expand *x, const char *file, int line)
{
	struct tally_conf_text *t = x->t;
	struct tally_conf_span *v;

	if (t->nspans && t->spans[t->nspans - 1].line == x->line)
		t->nspans--; /* nothing came from the previous one */
	v = realloc(t->spans, (t->nspans + 1) * sizeof(*v));
	if (!v)
		return -1;
	t->spans = v;
	t->spans[t->nspans++] = (struct tally_conf_span){ .line = x->line,
							  .file = file,
							  .file_line = line };
	return 0;
}

/* Keep @name for the life of the text; NULL on ENOMEM. */
static const char *text_keep_name(struct tally_conf_text *t, char *name)
{
	char **v = realloc(t->files, (t->nfiles + 1) * sizeof(*v));

	if (!v) {
		free(name);
		return NULL;
	}
	t->files = v;
	t->files[t->nfiles++] = name;
	return name;
}

/*
 * Read all of the regular file @path into a NUL-terminated buffer. Not a
 * FIFO or a device: opening a FIFO would wait for a writer, reading a
 * device could never end. O_NONBLOCK makes the open return at once.
 */
static char *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	FILE *f;
	int fd;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto out_close;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto out_close;
	}
	if (st.st_size >= (off_t)TEXT_MAX_BYTES) {
		errno = EFBIG;
		goto out_close;
	}
	f = fdopen(fd, "r");
	if (!f)
		goto out_close;
	buf = malloc((size_t)st.st_size + 1);
	if (buf) {
		/* the size may change while we read: take what is there */
		n = fread(buf, 1, (size_t)st.st_size, f);
		if (ferror(f)) {
			free(buf);
			buf = NULL;
			errno = EIO;
		} else {
			buf[n] = '\0';
			*len = n;
		}
	}
	fclose(f);
	return buf;
out_close:
	close(fd);
	return NULL;
}

/* Why read_file() failed, for a message. */
static const char *read_error(int err)
{
	return err == EINVAL ? "not a regular file" : strerror(err);
}

/* The path of @inc, written in @file: relative ones from @file's dir. */
static char *include_path(const char *file, const char *inc, size_t len)
{
	const char *slash = strrchr(file, '/');
	size_t dlen = inc[0] == '/' || !slash ? 0 : (size_t)(slash - file) + 1;
	char *p = malloc(dlen + len + 1), *o;

	if (!p)
		return NULL;
	memcpy(p, file, dlen);
	o = p + dlen;
	for (size_t i = 0; i < len; i++) {
		/* libconfig's two escapes in include paths: \\ and \" */
		if (inc[i] == '\\' && i + 1 < len &&
		    (inc[i + 1] == '\\' || inc[i + 1] == '"'))
			i++;
		*o++ = inc[i];
	}
	*o = '\0';
	return p;
}

static int expand_text(struct expand *x, const char *file, const char *s,
		       size_t len, int depth);

/* Expand the file an @include directive (@t, in @file) names. */
static int expand_include(struct expand *x, const char *file,
			  const struct tok *t, int depth)
{
	char *path = include_path(file, t->path, t->path_len), *buf;
	const char *name;
	size_t len;
	int ret;

	if (!path)
		return -1;
	if (depth + 1 > TEXT_MAX_INCLUDE_DEPTH) {
		tally_log_conf(LOG_ERR, file, t->line,
			       "@include \"%s\": more than %d nested includes "
			       "(does a file include itself?)",
			       path, TEXT_MAX_INCLUDE_DEPTH);
		free(path);
		errno = ELOOP;
		return -1;
	}
	buf = read_file(path, &len);
	if (!buf) {
		tally_log_conf(LOG_ERR, file, t->line,
			       "@include \"%s\": cannot read: %s", path,
			       read_error(errno));
		free(path);
		return -1;
	}
	name = text_keep_name(x->t, path);
	ret = name ? expand_text(x, name, buf, len, depth + 1) : -1;
	free(buf);
	return ret;
}

/*
 * Append @s (the text of @file) to the expanded text, each @include
 * directive replaced by the text it names. The included text starts where
 * the directive stood, so that only blanks precede it on that line; what
 * follows the directive on its line goes on a line of its own after the
 * included text, mapped back to the directive's line.
 */
static int expand_text(struct expand *x, const char *file, const char *s,
		       size_t len, int depth)
{
	struct lexer lx = { .p = s, .end = s + len, .line = 1, .bol = true };
	const char *copied = s;
	struct tok t;

	if (text_span(x, file, 1) < 0)
		return -1;
	for (lex_next(&lx, &t); t.type != TOK_EOF; lex_next(&lx, &t)) {
		if (t.type != TOK_INCLUDE)
			continue;
		if (text_append(x, copied, (size_t)(t.s - copied)) < 0 ||
		    expand_include(x, file, &t, depth) < 0)
			return -1;
		if (x->t->len && x->t->text[x->t->len - 1] != '\n' &&
		    text_append(x, "\n", 1) < 0)
			return -1;
		if (text_span(x, file, t.line) < 0)
			return -1;
		copied = t.end;
	}
	return text_append(x, copied, (size_t)(s + len - copied));
}

int tally_conf_text_parse(struct tally_conf_text *t, const char *name,
			  const char *s, size_t len)
{
	struct expand x = { .t = t, .line = 1 };
	char *n = strdup(name);
	const char *kept;

	memset(t, 0, sizeof(*t));
	if (!n)
		return -1;
	/* libconfig reads a C string: what follows a NUL byte is not read */
	len = strnlen(s, len);
	kept = text_keep_name(t, n);
	if (!kept || expand_text(&x, kept, s, len, 0) < 0 ||
	    text_append(&x, "", 0) < 0) {
		int err = errno;

		if (err == EFBIG)
			tally_log_conf(LOG_ERR, name, 0,
				       "more than %u MiB with its includes",
				       TEXT_MAX_BYTES >> 20);
		tally_conf_text_free(t);
		errno = err;
		return -1;
	}
	return 0;
}

int tally_conf_text_load(struct tally_conf_text *t, const char *path)
{
	size_t len;
	char *buf = read_file(path, &len);
	int ret;

	if (!buf) {
		memset(t, 0, sizeof(*t));
		tally_log_conf(LOG_ERR, path, 0, "cannot read: %s",
			       read_error(errno));
		return -1;
	}
	ret = tally_conf_text_parse(t, path, buf, len);
	free(buf);
	return ret;
}

void tally_conf_text_free(struct tally_conf_text *t)
{
	if (!t)
		return;
	free(t->text);
	free(t->spans);
	for (size_t i = 0; i < t->nfiles; i++)
		free(t->files[i]);
	free(t->files);
	memset(t, 0, sizeof(*t));
}

void tally_conf_text_where(const struct tally_conf_text *t, int line,
			   const char **file, int *file_line)
{
	size_t lo = 0, hi = t->nspans;

	if (!t->nspans || line < 1) {
		*file = t->nfiles ? t->files[0] : NULL;
		*file_line = line;
		return;
	}
	/* the last span starting at or before @line */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->spans[mid].line <= line)
			lo = mid;
		else
			hi = mid;
	}
	*file = t->spans[lo].file;
	*file_line = t->spans[lo].file_line + (line - t->spans[lo].line);
}

/*
 * Walking the structure
 *
 * A small state machine over the tokens keeps the path to the current
 * value (member names and list indexes) and, for finding duplicates, the
 * names each open group has seen.
 */

struct comp {
	const char *name; /* member of a group, not NUL-terminated */
	size_t len;
	int index; /* element of a list or array */
};

struct member {
	const char *name;
	size_t len;
	int line;
};

struct frame {
	bool list;
	int index;	     /* lists: the element being read */
	struct comp comp;    /* how the parent names this value */
	struct member *seen; /* groups, when finding duplicates */
	size_t nseen;
};

enum walk_state {
	W_MEMBER,  /* in a group: a name, a separator or the end */
	W_EQUALS,  /* after a member's name */
	W_VALUE,   /* a value for comp */
	W_ELEMENT, /* in a list: a value or the end */
	W_AFTER,   /* in a list: after a value */
};

struct walk {
	/* what to look for: the path of a setting, or duplicates */
	const struct comp *target;
	size_t ntarget;
	bool dups;
	/* results */
	struct tok found; /* the target's literal */
	struct frame dup_at[TEXT_MAX_NESTING];
	size_t dup_depth; /* frames of the duplicate's group */
	struct member dup, dup_first;
};

static void walk_free_frames(struct frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(f[i].seen);
}

/* Whether @name was seen in group @f; remember it. 1: a duplicate. */
static int walk_member(struct walk *w, struct frame *f, const struct tok *t)
{
	struct member *v;

	for (size_t i = 0; i < f->nseen; i++) {
		if (f->seen[i].len == t->len &&
		    !memcmp(f->seen[i].name, t->s, t->len)) {
			w->dup_first = f->seen[i];
			w->dup = (struct member){ t->s, t->len, t->line };
			return 1;
		}
	}
	v = realloc(f->seen, (f->nseen + 1) * sizeof(*v));
	if (!v)
		return -1;
	f->seen = v;
	f->seen[f->nseen++] = (struct member){ t->s, t->len, t->line };
	return 0;
}

static bool comp_equal(const struct comp *a, const struct comp *b)
{
	if (!a->name || !b->name)
		return !a->name && !b->name && a->index == b->index;
	return a->len == b->len && !memcmp(a->name, b->name, a->len);
}

/*
 * Walk @text. Returns 1 when it found what @w looks for, 0 when not, -1 on
 * ENOMEM.
 */
static int walk_text(const char *text, struct walk *w)
{
	struct lexer lx = { .p = text, .end = text + strlen(text), .line = 1 };
	struct frame fr[TEXT_MAX_NESTING] = { 0 }, root = { 0 };
	enum walk_state st = W_MEMBER;
	size_t depth = 0, matched = 0; /* frames above the root */
	struct comp comp = { 0 };
	bool string_value = false;
	int ret = 0;
	struct tok t;

	for (lex_next(&lx, &t); t.type != TOK_EOF && ret == 0;
	     lex_next(&lx, &t)) {
		struct frame *cur = depth ? &fr[depth - 1] : NULL;
		bool hit;

		/* "a" "b" is one string */
		if (string_value && t.type == TOK_STRING)
			continue;
		string_value = false;
		if (st == W_ELEMENT && t.type != TOK_LIST_CLOSE) {
			comp = (struct comp){ .index = cur->index };
			st = W_VALUE;
		}
		switch (st) {
		case W_MEMBER:
			if (t.type == TOK_SEP || t.type == TOK_COMMA)
				continue;
			if (t.type == TOK_GROUP_CLOSE && cur && !cur->list)
				goto pop;
			if (t.type != TOK_ATOM)
				goto out;
			if (w->dups &&
			    (ret = walk_member(w, cur ? cur : &root, &t))) {
				w->dup_depth = depth;
				memcpy(w->dup_at, fr, depth * sizeof(*fr));
				break;
			}
			comp = (struct comp){ .name = t.s, .len = t.len };
			st = W_EQUALS;
			continue;
		case W_EQUALS:
			if (t.type != TOK_EQUALS)
				goto out;
			st = W_VALUE;
			continue;
		case W_VALUE:
			hit = matched == depth && depth < w->ntarget &&
			      comp_equal(&comp, &w->target[depth]);
			if (t.type == TOK_GROUP_OPEN ||
			    t.type == TOK_LIST_OPEN) {
				if (depth == TEXT_MAX_NESTING)
					goto out;
				fr[depth] =
					(struct frame){ .list = t.type ==
								TOK_LIST_OPEN,
							.comp = comp };
				depth++;
				matched += hit;
				st = t.type == TOK_LIST_OPEN ? W_ELEMENT
							     : W_MEMBER;
				continue;
			}
			if (t.type != TOK_ATOM && t.type != TOK_STRING)
				goto out;
			if (hit && depth + 1 == w->ntarget) {
				w->found = t;
				ret = 1;
				break;
			}
			string_value = t.type == TOK_STRING;
			st = cur && cur->list ? W_AFTER : W_MEMBER;
			continue;
		case W_ELEMENT:
		case W_AFTER:
			if (t.type == TOK_LIST_CLOSE)
				goto pop;
			if (st == W_ELEMENT || t.type != TOK_COMMA)
				goto out;
			cur->index++;
			st = W_ELEMENT;
			continue;
		}
		break;
	pop:
		free(cur->seen);
		depth--;
		if (matched > depth)
			matched = depth;
		st = depth && fr[depth - 1].list ? W_AFTER : W_MEMBER;
	}
out:
	if (ret == 1 && w->dups) {
		/* the copied frames' seen lists stay with fr: not theirs */
		for (size_t i = 0; i < w->dup_depth; i++) {
			w->dup_at[i].seen = NULL;
			w->dup_at[i].nseen = 0;
		}
	}
	walk_free_frames(fr, depth);
	free(root.seen);
	return ret;
}

int tally_conf_text_literal(const struct tally_conf_text *t,
			    const config_setting_t *s, char *buf, size_t size)
{
	struct comp path[TEXT_MAX_NESTING];
	struct walk w = { 0 };
	size_t n = 0;

	/* the setting's path from the root, deepest last */
	for (const config_setting_t *e = s; e && config_setting_parent(e);
	     e = config_setting_parent(e)) {
		const config_setting_t *p = config_setting_parent(e);

		if (n == TEXT_MAX_NESTING)
			goto out_noent;
		if (config_setting_type(p) == CONFIG_TYPE_GROUP)
			path[n] = (struct comp){
				.name = config_setting_name(e),
				.len = strlen(config_setting_name(e))
			};
		else
			path[n] = (struct comp){ .index = config_setting_index(
							 e) };
		n++;
	}
	for (size_t i = 0; i < n / 2; i++) {
		struct comp tmp = path[i];

		path[i] = path[n - 1 - i];
		path[n - 1 - i] = tmp;
	}
	w.target = path;
	w.ntarget = n;
	if (!t || !t->text || !n || walk_text(t->text, &w) != 1)
		goto out_noent;
	if (w.found.len >= size) {
		errno = ENOSPC;
		return -1;
	}
	memcpy(buf, w.found.s, w.found.len);
	buf[w.found.len] = '\0';
	return 0;
out_noent:
	errno = ENOENT;
	return -1;
}

int tally_conf_text_duplicate(const struct tally_conf_text *t, char *name,
			      size_t size, int *line, int *first_line)
{
	struct walk w = { .dups = true };
	size_t len = 0;
	int r;

	if (!t || !t->text || size == 0) {
		errno = ENOENT;
		return -1;
	}
	r = walk_text(t->text, &w);
	if (r < 0)
		return -1;
	if (r == 0) {
		errno = ENOENT;
		return -1;
	}
	/* "inputs.a.count", "x[2].y": the path of the group, then the name */
	name[0] = '\0';
	for (size_t i = 0; i <= w.dup_depth; i++) {
		const struct comp *c =
			i < w.dup_depth ? &w.dup_at[i].comp : NULL;
		int n;

		if (!c)
			n = snprintf(name + len, size - len, "%s%.*s",
				     len ? "." : "", (int)w.dup.len,
				     w.dup.name);
		else if (c->name)
			n = snprintf(name + len, size - len, "%s%.*s",
				     len ? "." : "", (int)c->len, c->name);
		else
			n = snprintf(name + len, size - len, "[%d]", c->index);
		if (n < 0 || (size_t)n >= size - len) {
			errno = ENOSPC;
			return -1;
		}
		len += (size_t)n;
	}
	*line = w.dup.line;
	*first_line = w.dup_first.line;
	return 0;
}

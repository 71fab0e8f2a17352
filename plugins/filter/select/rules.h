/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/select/rules.h - what the select filter keeps, drops and
 * rewrites, decided per record
 *
 * Rules, applied in this order:
 *   1. names: a record whose name (a metric's name, a span's region)
 *      matches none of @keep_names (when any is given) or any of
 *      @drop_names is dropped (POSIX extended regular expressions,
 *      unanchored: write ^...$ for a whole name);
 *   2. labels (metrics): one that lacks a match for every "key=regex" of
 *      @keep_if, or matches any of @drop_if, is dropped (the regex is
 *      anchored to the whole value; a missing key matches nothing);
 *   3. rewrites (metrics): @rename ("old=new", whole names), then the
 *      label keys: @drop_labels removed, @keep_labels (when any) the only
 *      ones left, @rename_labels ("old=new") renamed, then @add_labels
 *      added where the record lacks the key.
 * Spans go through rule 1 only.
 *
 * Thread-safety: a rule set is read-only once built; any thread.
 */
#ifndef SELECT_RULES_H
#define SELECT_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include <tally/config.h>
#include <tally/record.h>

struct sel_rules;

/**
 * struct sel_opts - the options a rule set is built from (borrowed for
 * the call only, except @keep_names and @drop_names, which must outlive
 * the rule set)
 */
struct sel_opts {
	const struct tally_regexlist *keep_names;
	const struct tally_regexlist *drop_names;
	const struct tally_strlist *keep_if;
	const struct tally_strlist *drop_if;
	const struct tally_strlist *rename;
	const struct tally_strlist *drop_labels;
	const struct tally_strlist *keep_labels;
	const struct tally_strlist *rename_labels;
	struct tally_labels *add_labels; /* NULL: none */
};

/**
 * sel_rules_new() - compile a rule set
 * @err: on EINVAL, a message naming the bad entry (static or in @errbuf)
 *
 * Return: the rules, or NULL with errno = ENOMEM, or EINVAL (an entry
 * without '=', an empty key or name, a bad regular expression).
 */
struct sel_rules *sel_rules_new(const struct sel_opts *o, char *errbuf,
				size_t errsize);

/** sel_rules_free() - free a rule set; NULL is a no-op */
void sel_rules_free(struct sel_rules *r);

/** sel_rules_rewrites() - whether the rules may change a record kept */
bool sel_rules_rewrites(const struct sel_rules *r);

/**
 * sel_rules_keep() - whether @rec is kept (rules 1 and 2). Pure.
 */
bool sel_rules_keep(const struct sel_rules *r, const struct tally_record *rec);

/**
 * sel_rules_rewrite() - the name and labels a kept metric takes (rule 3)
 * @m:      the metric
 * @name:   set to the new name (a string of the rule set), or @m's
 * @labels: set to a new reference to the new label set (the caller
 *          unrefs it)
 * Return: 0, or -1 with errno = ENOMEM.
 */
int sel_rules_rewrite(const struct sel_rules *r, const struct tally_metric *m,
		      const char **name, struct tally_labels **labels);

#endif /* SELECT_RULES_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/sysfs/edac.c - the edac group: memory ECC error counts
 *
 * node_exporter's edac collector, from /sys/devices/system/edac/mc/mcN
 * (controller="N"):
 *   ce_count, ue_count   node_edac_{correctable,uncorrectable}_errors_total
 *   csrowM/ce_count, ue_count, and ce_noinfo_count, ue_noinfo_count (errors
 *   the driver could not place, as csrow="unknown")
 *                        node_edac_csrow_{correctable,uncorrectable}_errors_total
 *                        {controller,csrow}
 * These are the counts HPC sites page on: a DIMM whose correctable count
 * climbs is replaced before it fails.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "sysfs.h"

static const char edac_ce[] = "node_edac_csrow_correctable_errors_total";
static const char edac_ue[] = "node_edac_csrow_uncorrectable_errors_total";
static const char edac_ce_help[] =
	"Total correctable memory errors for this csrow.";
static const char edac_ue_help[] =
	"Total uncorrectable memory errors for this csrow.";

/* The two csrow counters of @dir (a csrow, or the controller's noinfo). */
static int edac_csrow(struct sysfs *s, const char *ce, const char *ue,
		      const char *mc, const char *csrow)
{
	struct tally_labels *l =
		tally_labels_newv("controller", mc, "csrow", csrow, NULL);
	int ret;

	if (!l)
		return -1;
	ret = sysfs_add(s, ce, 1, 1, TALLY_COUNTER, edac_ce, edac_ce_help, l);
	if (ret == 0)
		ret = sysfs_add(s, ue, 1, 1, TALLY_COUNTER, edac_ue,
				edac_ue_help, l);
	tally_labels_unref(l);
	return ret;
}

static int edac_controller(struct sysfs *s, const char *dir, const char *mc)
{
	char ce[PATH_MAX], ue[PATH_MAX], mcdir[PATH_MAX];
	struct tally_labels *l;
	char **rows;
	int n, ret;

	sysfs_fmt(mcdir, sizeof(mcdir), "%s/mc%s", dir, mc);
	l = tally_labels_newv("controller", mc, NULL);
	if (!l)
		return -1;
	sysfs_fmt(ce, sizeof(ce), "%s/ce_count", mcdir);
	sysfs_fmt(ue, sizeof(ue), "%s/ue_count", mcdir);
	ret = sysfs_add(s, ce, 1, 1, TALLY_COUNTER,
			"node_edac_correctable_errors_total",
			"Total correctable memory errors.", l);
	if (ret == 0)
		ret = sysfs_add(s, ue, 1, 1, TALLY_COUNTER,
				"node_edac_uncorrectable_errors_total",
				"Total uncorrectable memory errors.", l);
	tally_labels_unref(l);
	if (ret < 0)
		return -1;
	sysfs_fmt(ce, sizeof(ce), "%s/ce_noinfo_count", mcdir);
	sysfs_fmt(ue, sizeof(ue), "%s/ue_noinfo_count", mcdir);
	if (edac_csrow(s, ce, ue, mc, "unknown") < 0)
		return -1;
	n = sysfs_scandir(mcdir, "csrow", &rows);
	if (n < 0)
		return errno == ENOMEM ? -1 : 0;
	for (int i = 0; i < n && ret == 0; i++) {
		sysfs_fmt(ce, sizeof(ce), "%s/%s/ce_count", mcdir, rows[i]);
		sysfs_fmt(ue, sizeof(ue), "%s/%s/ue_count", mcdir, rows[i]);
		ret = edac_csrow(s, ce, ue, mc,
				 sysfs_numbered(rows[i], "csrow"));
	}
	sysfs_free_names(rows);
	return ret;
}

int sysfs_scan_edac(struct tally_instance *inst, struct sysfs *s)
{
	char dir[PATH_MAX];
	char **names;
	int n;

	sysfs_fmt(dir, sizeof(dir), "%s/devices/system/edac/mc", s->root);
	n = sysfs_scandir(dir, "mc", &names);
	if (n < 0) {
		if (errno == ENOMEM)
			return -1;
		tally_log(inst, LOG_DEBUG, "%s: %s, no edac metrics", dir,
			  strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++)
		if (edac_controller(s, dir, sysfs_numbered(names[i], "mc")) <
		    0) {
			sysfs_free_names(names);
			return -1;
		}
	sysfs_free_names(names);
	return 0;
}

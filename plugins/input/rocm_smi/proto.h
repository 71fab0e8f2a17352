/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/rocm_smi/proto.h - what the rocm_smi input and its helper
 * process say to each other (doc/plugins/rocm_smi.md, "Helper protocol"),
 * and the metric table both sides share
 *
 * Pure code: no I/O, no allocation, no library calls, so that the unit test
 * (t/unit/rocm_smi.c) drives it alone and the helper and the plugin cannot
 * disagree on a name, a unit or a line.
 */
#ifndef TALLY_ROCM_SMI_PROTO_H
#define TALLY_ROCM_SMI_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Version in the helper's hello line; the plugin refuses another.
 * 2: rocm_version_info carries schema (Omnistat's labels), not serial;
 * rocm_temperature_sensor_celsius (-t). */
#define ROCM_PROTO_VERSION 2
/* Longest line either side writes, '\n' included. */
#define ROCM_PROTO_LINE_MAX 1024
/* The temperature sensors' location labels, in the helper's order */
#define ROCM_TEMP_LOCATIONS 7
extern const char *const rocm_temp_locations[ROCM_TEMP_LOCATIONS];
/** rocm_temp_location() - index of @loc in rocm_temp_locations[], or -1 */
int rocm_temp_location(const char *loc);

/* Labels a sample line carries besides card. */
#define ROCM_PROTO_MAX_LABELS 4

/** enum rocm_msg_type - the kinds of line (first field) */
enum rocm_msg_type {
	ROCM_MSG_HELLO = 1, /* "hello" VERSION PID */
	ROCM_MSG_READY,	    /* "ready" NGPUS LIBRARY_VERSION */
	ROCM_MSG_FAIL,	    /* "fail" REASON: no GPU, init failed */
	ROCM_MSG_SKIP,	    /* "skip" CARD METRIC WHY: not read on CARD */
	ROCM_MSG_SAMPLE,    /* "m" NAME CARD VALUE [KEY=VALUE...] */
	ROCM_MSG_END,	    /* "end" FAILED: a read's last line */
	ROCM_MSG_NOTE,	    /* "note" TEXT: for the log */
};

/**
 * enum rocm_bad - why rocm_proto_parse() refused a line; each is counted
 * as tally_dropped_total{reason=rocm_bad_reason[bad]}
 */
enum rocm_bad {
	ROCM_BAD_NONE = 0,
	ROCM_BAD_MALFORMED,   /* fields, numbers, names or labels wrong */
	ROCM_BAD_UTF8,	      /* not UTF-8, or a control character */
	ROCM_BAD_CARD,	      /* a card beyond the helper's GPUs */
	ROCM_BAD_VALUE,	      /* NaN or infinite */
	ROCM_BAD_TEMPERATURE, /* outside rocm_temp_valid(): a sentinel */
	ROCM_BAD_PERCENT,     /* a percentage outside [0, 100] */
	ROCM_BAD_NEGATIVE,    /* below 0 where no value can be */
	/* the plugin's, from what the helper said before (not the parser's) */
	ROCM_BAD_UNREQUESTED, /* a metric whose option is off */
	ROCM_BAD_SKIPPED,     /* a metric the helper skipped on that card */
	ROCM_BAD_DUPLICATE,   /* a series already in this read */
	ROCM_BAD_COUNT,
};

/* "malformed", "invalid_utf8", "card_out_of_range", "not_finite",
 * "invalid_temperature", "invalid_percentage", "negative_value",
 * "not_requested", "skipped_metric", "duplicate_series" (static strings,
 * for tally_count_drop()) */
extern const char *const rocm_bad_reason[ROCM_BAD_COUNT];

/**
 * struct rocm_msg - one parsed line; strings point into the parsed buffer
 * @type:   enum rocm_msg_type
 * @bad:    why the line was refused (rocm_proto_parse() failed), else 0
 * @name:   SAMPLE, SKIP: metric name; READY: library version;
 *          FAIL: reason text; NOTE: the text
 * @card:   SAMPLE, SKIP: card index, -1 for none ("-")
 * @value:  SAMPLE: the value, in the metric's unit
 * @n:      HELLO: protocol version; READY: GPUs; END: failed queries
 * @pid:    HELLO: the helper's pid
 * @why:    SKIP: why the metric is not read there
 * @nlabels, @key, @val: SAMPLE: the labels besides card, in order
 */
struct rocm_msg {
	enum rocm_msg_type type;
	enum rocm_bad bad;
	const char *name;
	int card;
	double value;
	uint64_t n;
	long pid;
	const char *why;
	unsigned nlabels;
	const char *key[ROCM_PROTO_MAX_LABELS];
	const char *val[ROCM_PROTO_MAX_LABELS];
};

/**
 * rocm_proto_parse() - parse one line (without its '\n') in place
 * @line:  NUL-terminated; its tabs are overwritten with NULs
 * @ngpus: the GPUs the helper announced ("ready"): a sample's card must be
 *         below it; 0 before "ready" (cards then up to 4095)
 * @m:     filled on success; on failure only @m->bad is meaningful
 *
 * Checks the whole line is UTF-8 without control characters (tab aside),
 * and the shape of every field: numbers are numbers, a sample's name is
 * one of rocm_metrics[], its labels are the ones that metric takes (a
 * temperature's location one of rocm_temp_locations[]), its value is
 * finite, for a temperature rocm_temp_valid(), for a percentage in
 * [0, 100], for every other metric not negative. Pure: no
 * I/O, no allocation (the fuzz target contrib/fuzz/rocm_proto_fuzz.c).
 * Return: 0, or -1 with errno = EINVAL and @m->bad saying why (a line to
 * drop and count).
 */
int rocm_proto_parse(char *line, uint32_t ngpus, struct rocm_msg *m);

/**
 * rocm_temp_valid() - whether @c degrees Celsius can be a GPU reading
 *
 * librocm_smi64 hands the driver's hwmon temp*_input through unchanged
 * (edge, junction, memory) and reads HBM sensors from the gpu_metrics
 * table: a sensor without a reading comes back as 0, as a board's fixed
 * placeholder (-5000 m°C) or as 0xFFFF °C (older libraries). No GPU that
 * runs is at or below 0 °C or above 500 °C: those are "not available".
 * Return: true for a reading in (0, 500] °C.
 */
int rocm_temp_valid(double c);

/**
 * rocm_proto_keyword() - does @line start with a protocol keyword and a tab?
 *
 * The helper's stdout and stderr share its socket (the library prints
 * there): lines that do not are the library's text, not protocol errors.
 */
int rocm_proto_keyword(const char *line);

/**
 * rocm_proto_clean() - make @s fit in one field: tabs, control characters
 * and bytes >= 0x7f become '_', leading and trailing blanks go
 * @s: modified in place
 * Return: @s
 */
char *rocm_proto_clean(char *s);

/** enum rocm_metric_id - every metric the helper may read */
enum rocm_metric_id {
	ROCM_M_NUM_GPUS,
	ROCM_M_VERSION_INFO,
	ROCM_M_UTILIZATION,
	ROCM_M_VRAM_TOTAL,
	ROCM_M_VRAM_USED,
	ROCM_M_VRAM_BUSY,
	ROCM_M_POWER,
	ROCM_M_ENERGY,
	ROCM_M_SCLK,
	ROCM_M_MCLK,
	ROCM_M_TEMP,
	ROCM_M_TEMP_MEM,
	ROCM_M_TEMP_SENSOR, /* every sensor (-t), not Omnistat's */
	ROCM_M_POWER_CAP,
	ROCM_M_RAS, /* first of the RAS counts, two per block */
	ROCM_M_COUNT = ROCM_M_RAS + 2 * 7,
};

/**
 * struct rocm_metric - a metric as tally exports it (Omnistat's names)
 * @name:  exported name
 * @help:  help text, with the unit
 * @label: the label besides card it carries ("location"), NULL for none;
 *         rocm_version_info carries four, listed in rocm_version_labels
 *         (Omnistat's: driver_ver, vbios, type, schema)
 */
struct rocm_metric {
	const char *name;
	const char *help;
	const char *label;
};

extern const struct rocm_metric rocm_metrics[ROCM_M_COUNT];
extern const char *const rocm_version_labels[4];
/* Omnistat's rocm_version_info schema label value (its collector's 1.0) */
#define ROCM_VERSION_SCHEMA "1.0"

/* The RAS blocks, in the order of their ids (ROCM_M_RAS + 2 * i, + 1 for
 * uncorrectable), and the rsmi_gpu_block_t bit of each. */
#define ROCM_RAS_BLOCKS 7
extern const char *const rocm_ras_blocks[ROCM_RAS_BLOCKS];
extern const uint64_t rocm_ras_bits[ROCM_RAS_BLOCKS];

/** rocm_metric_find() - the id of an exported name, or -1 */
int rocm_metric_find(const char *name);

/*
 * Unit conversions: the library's units to the exported ones.
 */
/** rocm_uw_to_w() - microwatts to watts */
double rocm_uw_to_w(uint64_t uw);
/** rocm_mc_to_c() - millidegrees Celsius to degrees Celsius */
double rocm_mc_to_c(int64_t mc);
/** rocm_hz_to_mhz() - hertz to megahertz */
double rocm_hz_to_mhz(uint64_t hz);
/** rocm_energy_j() - energy counter ticks of @res_uj microjoules, joules */
double rocm_energy_j(uint64_t count, float res_uj);
/**
 * rocm_used_pct() - @used of @total as a percentage
 * Return: 0, or -1 with errno = EDOM when @total is 0
 */
int rocm_used_pct(uint64_t used, uint64_t total, double *pct);

/*
 * Card numbers in KFD (HIP) order: the GPU nodes of
 * /sys/class/kfd/kfd/topology/nodes/N in increasing N, node with gpu_id 0
 * (CPUs) left out, as HIP_VISIBLE_DEVICES and Omnistat number them.
 */

/**
 * struct rocm_kfd_node - what the order needs of one topology node
 * @gpu_id:      the node's gpu_id file (0: a CPU)
 * @domain:      "domain" line of its properties (PCI domain)
 * @location_id: "location_id" line: PCI bus << 8 | device << 3 | function
 */
struct rocm_kfd_node {
	uint64_t gpu_id;
	uint32_t domain;
	uint32_t location_id;
};

/**
 * rocm_kfd_parse_properties() - read domain and location_id of @text
 * @text: a properties file's content ("key value" lines)
 * @node: its domain and location_id are set
 * Return: 0, or -1 with errno = EINVAL when location_id is missing
 */
int rocm_kfd_parse_properties(const char *text, struct rocm_kfd_node *node);

/**
 * rocm_card_order() - the card number of each library device
 * @nodes:  the topology nodes in increasing node number
 * @nnodes: their count
 * @bdfid:  per library device, rsmi_dev_pci_id_get()'s value (domain << 32
 *          | bus << 8 | device << 3 | function), or its KFD gpu_id when
 *          @by_gpu_id (rsmi_dev_guid_get() of newer libraries)
 * @ndev:   library devices
 * @by_gpu_id: match @bdfid against gpu_id instead of the PCI address
 * @card:   out, per library device
 *
 * Return: 0 when every device matched one GPU node, each a different one;
 * -1 with errno = ENOENT otherwise, and @card is then the library's own
 * order (0, 1, ...), the best guess left.
 */
int rocm_card_order(const struct rocm_kfd_node *nodes, size_t nnodes,
		    const uint64_t *bdfid, size_t ndev, int by_gpu_id,
		    int *card);

#endif /* TALLY_ROCM_SMI_PROTO_H */

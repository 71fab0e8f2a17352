/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/rocm_smi/helper.c - tally-rocm-helper: the process in which
 * librocm_smi64 runs for the rocm_smi input
 *
 * The library aborts its process on sysfs layouts it does not expect and
 * its calls can block on a wedged device, so tallyd never loads it: the
 * rocm_smi input starts this program (fork + exec) and talks to it over a
 * socketpair on fd 3, in the line protocol of proto.h (documented in
 * doc/plugins/rocm_smi.md). One read request gets every sample of every
 * GPU back, then "end".
 *
 * Cost model: the library is loaded and initialized once per helper; each
 * (device, metric) the probe at start found working is one library call
 * per read, whose cost is the library's (a few sysfs reads). No allocation
 * per read beyond stdio's buffer.
 *
 * Failure model: a library that cannot be loaded, an init failure or no GPU
 * is one "fail" line and exit 0 (the plugin idles and retries). A metric a
 * device does not support at the probe is a "skip" line and is never asked
 * again; a query that fails later is counted in "end" and asked again after
 * 2, 4, ... up to 64 reads. Anything worse (abort, hang) is the plugin's to
 * handle: it kills this process and starts another.
 *
 * Credentials: the helper runs as tallyd's user. It first gives itself a
 * private /dev/shm (the library keeps a process-shared mutex per card
 * there: a helper killed in a call would otherwise leave it locked for
 * every other rocm_smi user of the node, another collector included), as
 * root with a mount namespace, as a user with a user namespace too; then
 * it sets no_new_privs and drops every capability it has (bounding,
 * effective, permitted, inheritable, ambient), as root or in its user
 * namespace: uid 0 still owns the sysfs files it reads, nothing else is
 * needed. A bounding set it cannot empty (tallyd started without
 * CAP_SETPCAP) is said in a note.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <rocm_smi/rocm_smi.h>

#include "proto.h"

#define HELPER_FD	   3
#define HELPER_MAX_DEV	   64
#define HELPER_MAX_QUERIES 40
#define HELPER_MAX_BACKOFF 64
#define HELPER_KFD	   "/sys/class/kfd/kfd/topology/nodes"

/* rsmi_frequencies_t of ROCm 5 and of ROCm 6 (has_deep_sleep first, one
 * more frequency): the layout is chosen by the library's major version. */
struct freq_v5 {
	uint32_t num_supported;
	uint32_t current;
	uint64_t frequency[32];
};
struct freq_v6 {
	bool has_deep_sleep;
	uint32_t num_supported;
	uint32_t current;
	uint64_t frequency[33];
};

/* The library's functions, resolved by name: a missing one skips its
 * metrics only. Types as in rocm_smi.h of 5.2 (and later, same ABI). */
static struct {
	rsmi_status_t (*init)(uint64_t);
	rsmi_status_t (*num)(uint32_t *);
	rsmi_status_t (*status_string)(rsmi_status_t, const char **);
	rsmi_status_t (*version)(rsmi_version_t *);
	rsmi_status_t (*version_str)(rsmi_sw_component_t, char *, uint32_t);
	rsmi_status_t (*pci_id)(uint32_t, uint64_t *);
	rsmi_status_t (*guid)(uint32_t, uint64_t *);
	rsmi_status_t (*busy)(uint32_t, uint32_t *);
	rsmi_status_t (*mem_busy)(uint32_t, uint32_t *);
	rsmi_status_t (*mem_total)(uint32_t, rsmi_memory_type_t, uint64_t *);
	rsmi_status_t (*mem_usage)(uint32_t, rsmi_memory_type_t, uint64_t *);
	rsmi_status_t (*power_ave)(uint32_t, uint32_t, uint64_t *);
	rsmi_status_t (*power_get)(uint32_t, uint64_t *, uint32_t *);
	rsmi_status_t (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
	rsmi_status_t (*clk)(uint32_t, rsmi_clk_type_t, void *);
	rsmi_status_t (*temp)(uint32_t, uint32_t, rsmi_temperature_metric_t,
			      int64_t *);
	rsmi_status_t (*power_cap)(uint32_t, uint32_t, uint64_t *);
	rsmi_status_t (*ecc_enabled)(uint32_t, uint64_t *);
	rsmi_status_t (*ecc_count)(uint32_t, rsmi_gpu_block_t,
				   rsmi_error_count_t *);
	rsmi_status_t (*vbios)(uint32_t, char *, uint32_t);
	rsmi_status_t (*name)(uint32_t, char *, size_t);
} lib;

static const struct {
	const char *sym;
	size_t off;
	bool needed;
} lib_syms[] = {
#define SYM(f, s, n)                               \
	{                                          \
		s, offsetof(__typeof__(lib), f), n \
	}
	SYM(init, "rsmi_init", true),
	SYM(num, "rsmi_num_monitor_devices", true),
	SYM(status_string, "rsmi_status_string", false),
	SYM(version, "rsmi_version_get", false),
	SYM(version_str, "rsmi_version_str_get", false),
	SYM(pci_id, "rsmi_dev_pci_id_get", false),
	SYM(guid, "rsmi_dev_guid_get", false),
	SYM(busy, "rsmi_dev_busy_percent_get", false),
	SYM(mem_busy, "rsmi_dev_memory_busy_percent_get", false),
	SYM(mem_total, "rsmi_dev_memory_total_get", false),
	SYM(mem_usage, "rsmi_dev_memory_usage_get", false),
	SYM(power_ave, "rsmi_dev_power_ave_get", false),
	SYM(power_get, "rsmi_dev_power_get", false),
	SYM(energy, "rsmi_dev_energy_count_get", false),
	SYM(clk, "rsmi_dev_gpu_clk_freq_get", false),
	SYM(temp, "rsmi_dev_temp_metric_get", false),
	SYM(power_cap, "rsmi_dev_power_cap_get", false),
	SYM(ecc_enabled, "rsmi_dev_ecc_enabled_get", false),
	SYM(ecc_count, "rsmi_dev_ecc_count_get", false),
	SYM(vbios, "rsmi_dev_vbios_version_get", false),
	SYM(name, "rsmi_dev_name_get", false),
#undef SYM
};

/*
 * rsmi_temperature_type_t values and the location label of each, in the
 * order Omnistat tries them: rocm_temperature_celsius is the first that
 * reads (edge; junction where the GPU has no edge sensor, as MI300),
 * rocm_temperature_memory_celsius the first memory sensor that reads.
 */
static const struct {
	uint32_t type;
	bool memory;
	const char *location;
} temp_sensors[] = {
	/* the locations of rocm_temp_locations[], which tallyd takes */
	{ 0, false, "edge" }, { 1, false, "junction" }, { 2, true, "vram" },
	{ 3, true, "hbm_0" }, { 4, true, "hbm_1" },	{ 5, true, "hbm_2" },
	{ 6, true, "hbm_3" },
};

/* One (device, metric[, sensor or block]) the probe found working. */
struct query {
	int metric;	 /* enum rocm_metric_id */
	uint32_t arg;	 /* temperature type, RAS block index */
	const char *loc; /* location label, or NULL */
	uint32_t fails;	 /* consecutive failures */
	uint64_t next;	 /* read number from which it is asked again */
};

struct device {
	uint32_t ind; /* library index */
	int card;     /* KFD order */
	char vbios[128], type[128];
	struct query q[HELPER_MAX_QUERIES];
	unsigned nq;
};

static struct device devs[HELPER_MAX_DEV];
static uint32_t ndev;
static bool freq_v6;
static char driver_ver[128];
static FILE *out;
static uint64_t nreads;
static const char *library = "librocm_smi64.so.1";

/* ask()'s status when the library lacks the metric's function */
#define HELPER_NO_FUNCTION ((rsmi_status_t)0x7ffffff0)

/* The function each metric needs, for the line saying it is missing. */
static const char *const metric_fn[ROCM_M_COUNT] = {
	[ROCM_M_UTILIZATION] = "rsmi_dev_busy_percent_get",
	[ROCM_M_VRAM_TOTAL] = "rsmi_dev_memory_total_get",
	[ROCM_M_VRAM_USED] = "rsmi_dev_memory_usage_get",
	[ROCM_M_VRAM_BUSY] = "rsmi_dev_memory_busy_percent_get",
	[ROCM_M_POWER] = "rsmi_dev_power_ave_get",
	[ROCM_M_ENERGY] = "rsmi_dev_energy_count_get",
	[ROCM_M_SCLK] = "rsmi_dev_gpu_clk_freq_get",
	[ROCM_M_MCLK] = "rsmi_dev_gpu_clk_freq_get",
	[ROCM_M_TEMP] = "rsmi_dev_temp_metric_get",
	[ROCM_M_TEMP_MEM] = "rsmi_dev_temp_metric_get",
	[ROCM_M_TEMP_SENSOR] = "rsmi_dev_temp_metric_get",
	[ROCM_M_POWER_CAP] = "rsmi_dev_power_cap_get",
};

static const char *status_str(rsmi_status_t s)
{
	const char *str = NULL;
	static char buf[128];

	if (lib.status_string && lib.status_string(s, &str) == 0 && str) {
		/* the code: "RSMI_STATUS_NOT_SUPPORTED: This function ..." */
		size_t n = strncmp(str, "RSMI_", 5) ? strcspn(str, ".\n")
						    : strcspn(str, ":.\n");

		snprintf(buf, sizeof(buf), "%.*s", (int)n, str);
		return rocm_proto_clean(buf);
	}
	snprintf(buf, sizeof(buf), "status %d", (int)s);
	return buf;
}

/* One line: @prefix, a tab unless @prefix is empty, the text made fit. */
static void vline(const char *prefix, const char *fmt, va_list ap)
{
	char text[ROCM_PROTO_LINE_MAX - 8];

	vsnprintf(text, sizeof(text), fmt, ap);
	if (*prefix)
		fprintf(out, "%s\t%s\n", prefix, rocm_proto_clean(text));
	else
		fprintf(out, "%s\n", text);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap);
	va_end(ap);
}

static void flush_or_die(void)
{
	if (fflush(out) != 0)
		_exit(0); /* the plugin is gone */
}

/* Fail the start: one line the plugin logs, then exit 0 (not a crash). */
static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("fail", fmt, ap);
	va_end(ap);
	fflush(out);
	_exit(0);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("note", fmt, ap);
	va_end(ap);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/*
 * A /dev/shm of our own (see the header comment). Return: a note for the
 * plugin's log.
 */
static const char *private_shm(void)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];

	if (geteuid() == 0) {
		if (unshare(CLONE_NEWNS) < 0)
			return "no mount namespace: /dev/shm shared with other "
			       "rocm_smi users";
	} else {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return "no user namespace: /dev/shm shared with other "
			       "rocm_smi users";
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid,
			 (unsigned)uid);
		if (write_file("/proc/self/setgroups", "deny") < 0 ||
		    write_file("/proc/self/uid_map", map) < 0)
			return "user namespace without a uid map: /dev/shm "
			       "shared";
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid,
			 (unsigned)gid);
		if (write_file("/proc/self/gid_map", map) < 0)
			return "user namespace without a gid map: /dev/shm "
			       "shared";
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tally-rocm", "/dev/shm", "tmpfs",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=1m") < 0)
		return "cannot mount a private /dev/shm: shared with other "
		       "rocm_smi users";
	return NULL;
}

/*
 * no_new_privs, and no capability left (uid 0 keeps owning its files):
 * the bounding set emptied first (that needs CAP_SETPCAP, which root has
 * unless tallyd was started without it), then the effective, permitted and
 * inheritable sets (which empties the ambient set too). What could not be
 * dropped is said (a note the plugin logs), never silently kept.
 */
static void drop_privileges(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];
	int kept = 0, err = 0;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		note("no_new_privs: %s", strerror(errno));
	for (int c = 0; c <= 63; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == 0)
			continue;
		if (errno == EINVAL) /* beyond the kernel's last capability */
			break;
		err = errno;
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) > 0)
			kept++;
	}
	/* as root only: a user without capabilities has nothing to drop */
	if (kept && geteuid() == 0)
		note("capability bounding set kept (%d capabilities; "
		     "PR_CAPBSET_DROP: %s: tallyd runs without CAP_SETPCAP): "
		     "the effective, permitted and inheritable sets are "
		     "emptied, no_new_privs set",
		     kept, strerror(err));
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		note("capset: %s: capabilities kept", strerror(errno));
}

/* Test hooks: TALLY_TEST_ROCM_HELPER="abort_if:PATH" or "hang_if:PATH"
 * makes a read abort or hang while PATH exists (t/t1101-rocm-smi-*.t). */
static void test_hook(void)
{
	const char *h = getenv("TALLY_TEST_ROCM_HELPER");
	struct stat st;

	if (!h)
		return;
	if (!strncmp(h, "abort_if:", 9) && stat(h + 9, &st) == 0)
		abort();
	if (!strncmp(h, "hang_if:", 8) && stat(h + 8, &st) == 0)
		for (;;)
			pause();
}

static void load_library(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		fail("cannot load %s: %s", path, dlerror());
	for (size_t i = 0; i < sizeof(lib_syms) / sizeof(lib_syms[0]); i++) {
		void *f = dlsym(h, lib_syms[i].sym);

		if (!f && lib_syms[i].needed)
			fail("%s has no %s: not a ROCm SMI library", path,
			     lib_syms[i].sym);
		memcpy((char *)&lib + lib_syms[i].off, &f, sizeof(f));
	}
}

static char *read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static int node_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Number the devices in KFD order (proto.h, rocm_card_order()). */
static void order_cards(void)
{
	struct rocm_kfd_node nodes[HELPER_MAX_DEV * 2];
	long num[HELPER_MAX_DEV * 2];
	uint64_t key[HELPER_MAX_DEV];
	int card[HELPER_MAX_DEV];
	size_t nn = 0;
	bool by_gpu_id = lib.guid != NULL;
	DIR *d = opendir(HELPER_KFD);
	struct dirent *de;

	while (d && (de = readdir(d)) && nn < HELPER_MAX_DEV * 2) {
		char *end;
		long n = strtol(de->d_name, &end, 10);

		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && !*end)
			num[nn++] = n;
	}
	if (d)
		closedir(d);
	qsort(num, nn, sizeof(num[0]), node_cmp);
	for (size_t i = 0; i < nn; i++) {
		char path[PATH_MAX], buf[4096];

		memset(&nodes[i], 0, sizeof(nodes[i]));
		snprintf(path, sizeof(path), HELPER_KFD "/%ld/gpu_id", num[i]);
		if (read_small(path, buf, sizeof(buf)))
			nodes[i].gpu_id = strtoull(buf, NULL, 10);
		snprintf(path, sizeof(path), HELPER_KFD "/%ld/properties",
			 num[i]);
		if (nodes[i].gpu_id && read_small(path, buf, sizeof(buf)))
			rocm_kfd_parse_properties(buf, &nodes[i]);
	}
	for (uint32_t i = 0; i < ndev; i++) {
		key[i] = UINT64_MAX;
		if (by_gpu_id && lib.guid(i, &key[i]) != 0)
			key[i] = UINT64_MAX;
		else if (!by_gpu_id && (!lib.pci_id || lib.pci_id(i, &key[i])))
			key[i] = UINT64_MAX;
	}
	if (rocm_card_order(nodes, nn, key, ndev, by_gpu_id, card) < 0)
		note("GPUs do not match the KFD topology (%s): card numbers "
		     "follow the library's order",
		     HELPER_KFD);
	for (uint32_t i = 0; i < ndev; i++)
		devs[i].card = card[i];
}

/*
 * Ask one query. Return: 0 and *v, or the library's status.
 */
static rsmi_status_t ask(const struct device *d, const struct query *q,
			 double *v)
{
	uint32_t ind = d->ind, u32 = 0;
	uint64_t u64 = 0, u64b = 0;
	int64_t i64 = 0;
	float res = 0;
	rsmi_error_count_t ec;
	rsmi_status_t s = HELPER_NO_FUNCTION;

	switch (q->metric) {
	case ROCM_M_UTILIZATION:
		if (lib.busy && !(s = lib.busy(ind, &u32)))
			*v = u32;
		break;
	case ROCM_M_VRAM_BUSY:
		if (lib.mem_busy && !(s = lib.mem_busy(ind, &u32)))
			*v = u32;
		break;
	case ROCM_M_VRAM_TOTAL:
		if (lib.mem_total &&
		    !(s = lib.mem_total(ind, RSMI_MEM_TYPE_VRAM, &u64)))
			*v = (double)u64;
		break;
	case ROCM_M_VRAM_USED:
		if (!lib.mem_total || !lib.mem_usage)
			break;
		if ((s = lib.mem_total(ind, RSMI_MEM_TYPE_VRAM, &u64)) ||
		    (s = lib.mem_usage(ind, RSMI_MEM_TYPE_VRAM, &u64b)))
			break;
		if (rocm_used_pct(u64b, u64, v) < 0)
			s = RSMI_STATUS_UNEXPECTED_DATA;
		break;
	case ROCM_M_POWER:
		if (lib.power_get)
			s = lib.power_get(ind, &u64, &u32);
		else if (lib.power_ave)
			s = lib.power_ave(ind, 0, &u64);
		if (!s)
			*v = rocm_uw_to_w(u64);
		break;
	case ROCM_M_POWER_CAP:
		if (lib.power_cap && !(s = lib.power_cap(ind, 0, &u64)))
			*v = rocm_uw_to_w(u64);
		break;
	case ROCM_M_ENERGY:
		if (lib.energy && !(s = lib.energy(ind, &u64, &res, &u64b)))
			*v = rocm_energy_j(u64, res);
		break;
	case ROCM_M_SCLK:
	case ROCM_M_MCLK: {
		rsmi_clk_type_t t = q->metric == ROCM_M_SCLK
					    ? RSMI_CLK_TYPE_SYS
					    : RSMI_CLK_TYPE_MEM;
		union {
			struct freq_v5 v5;
			struct freq_v6 v6;
		} f;
		uint32_t n, cur;
		const uint64_t *hz;

		if (!lib.clk || (s = lib.clk(ind, t, &f)))
			break;
		n = freq_v6 ? f.v6.num_supported : f.v5.num_supported;
		cur = freq_v6 ? f.v6.current : f.v5.current;
		hz = freq_v6 ? f.v6.frequency : f.v5.frequency;
		if (cur >= n || n > 33)
			s = RSMI_STATUS_UNEXPECTED_DATA;
		else
			*v = rocm_hz_to_mhz(hz[cur]);
		break;
	}
	case ROCM_M_TEMP:
	case ROCM_M_TEMP_MEM:
	case ROCM_M_TEMP_SENSOR:
		if (lib.temp &&
		    !(s = lib.temp(ind, q->arg, RSMI_TEMP_CURRENT, &i64)))
			*v = rocm_mc_to_c(i64);
		break;
	default: /* RAS */
		if (!lib.ecc_count)
			break;
		s = lib.ecc_count(ind, rocm_ras_bits[q->arg], &ec);
		if (!s)
			*v = (double)((q->metric - ROCM_M_RAS) % 2
					      ? ec.uncorrectable_err
					      : ec.correctable_err);
		break;
	}
	return s;
}

static void add_query(struct device *d, int metric, uint32_t arg,
		      const char *loc)
{
	if (d->nq < HELPER_MAX_QUERIES)
		d->q[d->nq++] = (struct query){ metric, arg, loc, 0, 0 };
}

/* Keep @q if the device answers it now; else say why it is skipped. */
static bool probe(struct device *d, int metric, uint32_t arg, const char *loc)
{
	struct query q = { metric, arg, loc, 0, 0 };
	double v;
	rsmi_status_t s = ask(d, &q, &v);

	if (s == RSMI_STATUS_SUCCESS) {
		add_query(d, metric, arg, loc);
		return true;
	}
	if (s == HELPER_NO_FUNCTION)
		say("skip\t%d\t%s\t%s not in %s", d->card,
		    rocm_metrics[metric].name,
		    metric_fn[metric] ? metric_fn[metric] : "its function",
		    library);
	else
		say("skip\t%d\t%s\t%s", d->card, rocm_metrics[metric].name,
		    status_str(s));
	return false;
}

static void get_str(rsmi_status_t (*f)(uint32_t, char *, uint32_t),
		    uint32_t ind, char *buf, size_t len)
{
	buf[0] = '\0';
	if (f && f(ind, buf, (uint32_t)len) != 0)
		buf[0] = '\0';
	buf[len - 1] = '\0';
	rocm_proto_clean(buf);
}

/*
 * Whether temperature sensor @i of temp_sensors[] reads. A sensor the GPU
 * lacks can answer 0 or a placeholder (-5000 m°C on some boards, 0xFFFF
 * from gpu_metrics): what rocm_temp_valid() refuses is taken as absent.
 */
static bool temp_reads(struct device *d, size_t i)
{
	struct query q = { ROCM_M_TEMP, temp_sensors[i].type, NULL, 0, 0 };
	double v;

	return ask(d, &q, &v) == RSMI_STATUS_SUCCESS && rocm_temp_valid(v);
}

/* Omnistat's two temperatures, and with -t every sensor that reads. */
static void probe_temps(struct device *d, bool all)
{
	static const int fam[] = { ROCM_M_TEMP, ROCM_M_TEMP_MEM,
				   ROCM_M_TEMP_SENSOR };
	int pick[3] = { -1, -1, -1 };

	for (size_t i = 0; i < sizeof(temp_sensors) / sizeof(temp_sensors[0]);
	     i++) {
		if (!temp_reads(d, i))
			continue;
		if (pick[0] < 0)
			pick[0] = (int)i;
		if (pick[1] < 0 && temp_sensors[i].memory)
			pick[1] = (int)i;
		pick[2] = (int)i;
		if (all)
			add_query(d, ROCM_M_TEMP_SENSOR, temp_sensors[i].type,
				  temp_sensors[i].location);
	}
	for (int k = 0; k < (all ? 3 : 2); k++) {
		if (pick[k] < 0)
			say("skip\t%d\t%s\tno sensor reads", d->card,
			    rocm_metrics[fam[k]].name);
		else if (k < 2)
			add_query(d, fam[k], temp_sensors[pick[k]].type,
				  temp_sensors[pick[k]].location);
	}
}

static void probe_device(struct device *d, bool ras, bool power_cap,
			 bool all_temps)
{
	static const int plain[] = {
		ROCM_M_UTILIZATION, ROCM_M_VRAM_TOTAL, ROCM_M_VRAM_USED,
		ROCM_M_VRAM_BUSY,   ROCM_M_POWER,      ROCM_M_ENERGY,
		ROCM_M_SCLK,	    ROCM_M_MCLK,
	};
	uint64_t mask = 0;
	rsmi_status_t s;

	get_str(lib.vbios, d->ind, d->vbios, sizeof(d->vbios));
	d->type[0] = '\0';
	if (lib.name && lib.name(d->ind, d->type, sizeof(d->type)) != 0)
		d->type[0] = '\0';
	d->type[sizeof(d->type) - 1] = '\0';
	rocm_proto_clean(d->type);

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		probe(d, plain[i], 0, NULL);
	probe_temps(d, all_temps);
	if (power_cap)
		probe(d, ROCM_M_POWER_CAP, 0, NULL);
	if (!ras)
		return;
	if (!lib.ecc_enabled || !lib.ecc_count) {
		say("skip\t%d\t%s\tno RAS counts: rsmi_dev_ecc_enabled_get or "
		    "rsmi_dev_ecc_count_get not in %s",
		    d->card, rocm_metrics[ROCM_M_RAS].name, library);
		return;
	}
	s = lib.ecc_enabled(d->ind, &mask);
	if (s) {
		say("skip\t%d\t%s\tno RAS counts: ECC state %s", d->card,
		    rocm_metrics[ROCM_M_RAS].name, status_str(s));
		return;
	}
	/* as Omnistat: the blocks whose ECC is enabled, no others */
	for (int b = 0; b < ROCM_RAS_BLOCKS; b++) {
		if (!(mask & rocm_ras_bits[b]))
			continue;
		if (probe(d, ROCM_M_RAS + 2 * b, (uint32_t)b, NULL))
			add_query(d, ROCM_M_RAS + 2 * b + 1, (uint32_t)b, NULL);
	}
}

static void read_all(void)
{
	uint64_t failed = 0;

	nreads++;
	test_hook();
	say("m\trocm_num_gpus\t-\t%u", ndev);
	for (uint32_t i = 0; i < ndev; i++) {
		struct device *d = &devs[i];

		say("m\trocm_version_info\t%d\t1\tdriver_ver=%s\tvbios=%s\t"
		    "type=%s\tschema=%s",
		    d->card, driver_ver, d->vbios, d->type,
		    ROCM_VERSION_SCHEMA);
		for (unsigned k = 0; k < d->nq; k++) {
			struct query *q = &d->q[k];
			double v;

			if (nreads < q->next)
				continue;
			if (ask(d, q, &v) != RSMI_STATUS_SUCCESS) {
				uint64_t wait =
					1ull
					<< (q->fails < 6 ? q->fails + 1 : 6);

				q->fails++;
				q->next =
					nreads + (wait < HELPER_MAX_BACKOFF
							  ? wait
							  : HELPER_MAX_BACKOFF);
				failed++;
				continue;
			}
			q->fails = 0;
			if (q->loc)
				say("m\t%s\t%d\t%.17g\tlocation=%s",
				    rocm_metrics[q->metric].name, d->card, v,
				    q->loc);
			else
				say("m\t%s\t%d\t%.17g",
				    rocm_metrics[q->metric].name, d->card, v);
		}
	}
	say("end\t%llu", (unsigned long long)failed);
	flush_or_die();
}

int main(int argc, char **argv)
{
	bool ras = false, power_cap = false, all_temps = false;
	uint32_t ncards = 0;
	const char *shm_note;
	rsmi_version_t ver = { 0 };
	char verstr[64] = "unknown";
	char line[64];
	FILE *in;
	rsmi_status_t s;
	int opt;

	/* exit with tallyd, even if it dies without closing the socket */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	while ((opt = getopt(argc, argv, "l:rct")) != -1) {
		switch (opt) {
		case 'l':
			library = optarg;
			break;
		case 'r':
			ras = true;
			break;
		case 'c':
			power_cap = true;
			break;
		case 't':
			all_temps = true;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-l LIBRARY] [-r] [-c] [-t] "
				"(started by tallyd's rocm_smi input, "
				"protocol on fd 3)\n",
				argv[0]);
			return 2;
		}
	}
	if (getppid() == 1 || fcntl(HELPER_FD, F_GETFD) < 0) {
		fprintf(stderr, "%s: no tallyd on fd %d\n", argv[0], HELPER_FD);
		return 2;
	}
	out = fdopen(HELPER_FD, "w");
	in = fdopen(dup(HELPER_FD), "r");
	if (!out || !in)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	say("hello\t%d\t%ld", ROCM_PROTO_VERSION, (long)getpid());

	shm_note = private_shm();
	drop_privileges();
	if (shm_note)
		note("%s", shm_note);

	load_library(library);
	s = lib.init(0);
	if (s != RSMI_STATUS_SUCCESS) {
		struct stat st;

		fail("rsmi_init: %s%s", status_str(s),
		     stat("/dev/kfd", &st) < 0
			     ? " (no /dev/kfd: no AMD GPU or amdgpu not loaded)"
			     : "");
	}
	if (lib.num(&ndev) != RSMI_STATUS_SUCCESS || ndev == 0)
		fail("no AMD GPU found by %s", library);
	if (ndev > HELPER_MAX_DEV) {
		note("%u GPUs: only the first %d are read", ndev,
		     HELPER_MAX_DEV);
		ndev = HELPER_MAX_DEV;
	}
	if (lib.version && lib.version(&ver) == RSMI_STATUS_SUCCESS) {
		freq_v6 = ver.major >= 6;
		snprintf(verstr, sizeof(verstr), "%u.%u.%u", ver.major,
			 ver.minor, ver.patch);
	}
	if (!lib.version_str ||
	    lib.version_str(RSMI_SW_COMP_DRIVER, driver_ver,
			    sizeof(driver_ver)) != RSMI_STATUS_SUCCESS)
		driver_ver[0] = '\0';
	driver_ver[sizeof(driver_ver) - 1] = '\0';
	rocm_proto_clean(driver_ver);
	for (uint32_t i = 0; i < ndev; i++)
		devs[i].ind = i;
	order_cards();
	for (uint32_t i = 0; i < ndev; i++) {
		probe_device(&devs[i], ras, power_cap, all_temps);
		/* KFD may number a GPU the library does not see */
		if ((uint32_t)devs[i].card >= ncards)
			ncards = (uint32_t)devs[i].card + 1;
	}
	/* the card numbers are below it: tallyd drops any other */
	say("ready\t%u\t%s", ncards, verstr);
	flush_or_die();

	while (fgets(line, sizeof(line), in)) {
		if (!strcmp(line, "read\n"))
			read_all();
	}
	return 0; /* EOF: tallyd closed the socket */
}

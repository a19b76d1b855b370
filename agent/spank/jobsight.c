/*
 * jobsight.c - SPANK plugin that hands every job to its node's Jobsight agent.
 *
 * plugstack.conf:
 *   optional /usr/lib/x86_64-linux-gnu/slurm-wlm/jobsight.so agent=/usr/sbin/jobsight-agent config=/etc/jobsight/agent.yaml [state_dir=/var/lib/jobsight, the agent's state_dir]
 *
 * slurm_spank_job_prolog (slurmd context, as root, outside the job's cgroup)
 * and slurm_spank_job_epilog hand the job's start or end to the node's
 * agent over its Unix socket in STATE_DIR (one JSON line; a second at most),
 * with the job's SLURM_JOB_SLUID (Slurm 26.05 on: its cgroup v2 directory is
 * named by it) when slurmd set one that is a SLUID, and SLURM_JOB_NODELIST
 * (the allocation: which node assembles the job document).
 * When no agent answers they spawn "AGENT start --config CONFIG --job-id ID
 * --uid UID" or "AGENT stop --config CONFIG --job-id ID", fully detached
 * (SLURM_JOB_SLUID, when valid, in its environment),
 * which hands over or becomes the node's agent (one per node: the agent
 * takes a lock); the agent exits by itself once the node has no job left.
 * Users opt out with --jobsight=off. The job always wins: every hook
 * returns 0, nothing waits for the agent, a missing agent is only logged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

/* The bin directory of the Slurm the plugin was built against (the
 * Makefile's SLURM_PREFIX): first on the agent's PATH, so that the agent
 * finds squeue and scontrol where that Slurm put them (/usr/local/bin for a
 * source build's default prefix, /opt/slurm/bin, ...) without a path in
 * agent.yaml; then the usual system directories, /usr/local's included. */
#ifndef JOBSIGHT_SLURM_BIN
#define JOBSIGHT_SLURM_BIN "/usr/bin"
#endif

SPANK_PLUGIN(jobsight, 1);

/* The release this plugin was built for, readable without loading it
 * (slurmd refuses one built for another release):
 * `jobsight-spank-install --ensure` compares it with slurmd's before
 * slurmd starts, and rebuilds the plugin when they differ. */
#define JOBSIGHT_STR2(x) #x
#define JOBSIGHT_STR(x) JOBSIGHT_STR2(x)
const char jobsight_built_for[] = "jobsight SPANK plugin for SLURM_VERSION_NUMBER " JOBSIGHT_STR(SLURM_VERSION_NUMBER) ";";

#define DEFAULT_AGENT "/usr/sbin/jobsight-agent"
#define DEFAULT_CONFIG "/etc/jobsight/agent.yaml"
#define DEFAULT_STATE_DIR "/var/lib/jobsight"

static const char *agent_path = DEFAULT_AGENT;
static const char *config_path = DEFAULT_CONFIG;
static const char *state_dir = DEFAULT_STATE_DIR;

static int opt_cb(int val, const char *optarg, int remote);

static struct spank_option jobsight_opt = {
	"jobsight", "off",
	"Jobsight job monitoring: --jobsight=off starts no monitoring agent for this job.",
	1, 0, opt_cb,
};

static int opt_cb(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (optarg && (strcmp(optarg, "off") == 0 || strcmp(optarg, "on") == 0))
		return 0;
	slurm_error("jobsight: --jobsight takes \"off\" or \"on\", not \"%s\"", optarg ? optarg : "");
	return -1;
}

static void parse_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (strncmp(av[i], "agent=", 6) == 0)
			agent_path = av[i] + 6;
		else if (strncmp(av[i], "config=", 7) == 0)
			config_path = av[i] + 7;
		else if (strncmp(av[i], "state_dir=", 10) == 0)
			state_dir = av[i] + 10;
		else
			slurm_error("jobsight: ignoring unknown plugstack.conf argument \"%s\"", av[i]);
	}
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	parse_args(ac, av);
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
		if (spank_option_register(sp, &jobsight_opt) != ESPANK_SUCCESS)
			slurm_error("jobsight: could not register --jobsight");
		break;
	default:
		break;
	}
	return 0;
}

/* job_ids fills id and uid from spank items, else the prolog's env. */
static int job_ids(spank_t sp, char *id, size_t idlen, char *uid, size_t uidlen)
{
	uint32_t jid = 0;
	uid_t juid = (uid_t)-1;
	const char *e;

	if (spank_get_item(sp, S_JOB_ID, &jid) != ESPANK_SUCCESS || jid == 0) {
		e = getenv("SLURM_JOB_ID");
		jid = e ? (uint32_t)strtoul(e, NULL, 10) : 0;
	}
	if (spank_get_item(sp, S_JOB_UID, &juid) != ESPANK_SUCCESS) {
		e = getenv("SLURM_JOB_UID");
		juid = e ? (uid_t)strtoul(e, NULL, 10) : (uid_t)-1;
	}
	if (jid == 0)
		return -1;
	snprintf(id, idlen, "%u", jid);
	snprintf(uid, uidlen, "%ld", juid == (uid_t)-1 ? -1L : (long)juid);
	return 0;
}

/* job_sluid returns the prolog's SLURM_JOB_SLUID (Slurm 26.05 on), or NULL
 * when it is unset or is not a SLUID as Slurm prints it: "s" and 13
 * characters of Crockford's base32 alphabet (upper case, no I, L, O, U),
 * the first only 0-F (the top 4 of 64 bits). It goes into a JSON string and
 * names a directory under the cgroup root, so nothing else is passed on; an
 * invalid one is logged, once per hook. */
static const char *job_sluid(const char *hook)
{
	static const char cb32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	const char *s = getenv("SLURM_JOB_SLUID");
	int ok;

	if (!s || !*s)
		return NULL;
	ok = strlen(s) == 14 && s[0] == 's';
	for (int i = 1; ok && i < 14; i++)
		ok = s[i] != '\0' && strchr(i == 1 ? "0123456789ABCDEF" : cb32, s[i]) != NULL;
	if (!ok) {
		slurm_error("jobsight: %s: SLURM_JOB_SLUID is not a SLUID (\"s\" and 13 base32 characters); "
			    "leaving it out, the agent looks the job's cgroup up without it", hook);
		return NULL;
	}
	return s;
}

/* close_from closes every descriptor from lo up; only async-signal-safe
 * calls (it runs between fork and exec). close_range(2) where the kernel
 * and headers have it (Linux 5.9+; glibc before 2.34, e.g. RHEL/Rocky 8,
 * has no wrapper, so the raw system call is used), else a loop up to max,
 * which the parent computed before forking. */
static void close_from(int lo, long max)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned int)lo, ~0U, 0) == 0)
		return;
#endif
	for (long f = max - 1; f >= lo; f--)
		close((int)f);
}

/* spawn runs argv fully detached (setsid, double fork, fds on /dev/null)
 * and waits only for the intermediate child, which exits at once.
 * Everything the children need is prepared before fork: slurmd is
 * multithreaded, so between fork and exec only async-signal-safe calls
 * are allowed (no malloc, no stdio). */
static void spawn(char *const argv[], const char *sluid)
{
	static const char *keep[] = { "SLURM_CONF", "SLURMD_NODENAME", "SLURM_CLUSTER_NAME", "SLURM_JOB_GPUS",
				      "SLURM_JOB_NODELIST", "TZ", NULL };
	static char envbuf[10][4096];
	char *env[10];
	int n = 0;
	long maxfd;
	pid_t pid;
	int status;

	if (access(argv[0], X_OK) != 0) {
		slurm_error("jobsight: agent %s is not executable (%s); job runs without monitoring",
			    argv[0], strerror(errno));
		return;
	}
	env[n++] = "PATH=" JOBSIGHT_SLURM_BIN ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (int i = 0; keep[i] && n < 8; i++) {
		const char *v = getenv(keep[i]);
		int len;
		if (!v)
			continue;
		len = snprintf(envbuf[n], sizeof(envbuf[n]), "%s=%s", keep[i], v);
		if (len < 0 || (size_t)len >= sizeof(envbuf[n])) {
			slurm_error("jobsight: %s is too long to pass to the agent; leaving it out", keep[i]);
			continue;
		}
		env[n] = envbuf[n];
		n++;
	}
	if (sluid) { /* checked by job_sluid: 14 characters */
		snprintf(envbuf[n], sizeof(envbuf[n]), "SLURM_JOB_SLUID=%s", sluid);
		env[n] = envbuf[n];
		n++;
	}
	env[n] = NULL;
	maxfd = sysconf(_SC_OPEN_MAX);
	if (maxfd < 0 || maxfd > 65536)
		maxfd = 65536;

	pid = fork();
	if (pid < 0) {
		slurm_error("jobsight: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		int fd;
		sigset_t none;

		setsid();
		if (fork() != 0)
			_exit(0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++)
			signal(s, SIG_DFL);
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		close_from(3, maxfd);
		execve(argv[0], argv, env);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static int opted_out(spank_t sp)
{
	char *arg = NULL;
	return spank_option_getopt(sp, &jobsight_opt, &arg) == ESPANK_SUCCESS &&
	       arg && strcmp(arg, "off") == 0;
}

/* plain reports whether s holds only characters that need no escaping in
 * a JSON string (SLURM_JOB_GPUS is a list of device indices,
 * SLURM_JOB_NODELIST a hostlist such as "gpu[01-04],login1"). GPUs that
 * are not plain go the slow way, through the agent process's environment;
 * a node list that is not is left out, and the agent asks Slurm. */
static int plain(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      *s == ',' || *s == ':' || *s == '-' || *s == '_' || *s == '.' || *s == '[' || *s == ']'))
			return 0;
	return 1;
}

/* MAX_NODES_LEN is the longest SLURM_JOB_NODELIST passed on (the agent's
 * jobagent.MaxNodesLen); a longer one is left out and the agent takes the
 * job's nodes from Slurm's answer. */
#define MAX_NODES_LEN 4000

/* hand_over gives the job's start or end to the node's running agent over
 * its Unix socket (STATE_DIR/agent@NODE.sock), one JSON line, and returns 0
 * when the agent answered "ok". Anything else (no agent, an agent that is
 * exiting, a timeout: at most a second each way) returns -1 and the caller
 * spawns the agent, which hands over or becomes the node's agent itself.
 * This saves starting a process at every job start and end on a node
 * whose agent runs. */
static int hand_over(const char *op, const char *id, const char *uid, const char *sluid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 1, .tv_usec = 0 };
	char host[256], msg[1400 + MAX_NODES_LEN], reply[8];
	const char *node = getenv("SLURMD_NODENAME");
	const char *gpus = strcmp(op, "start") == 0 ? getenv("SLURM_JOB_GPUS") : NULL;
	const char *nodes = getenv("SLURM_JOB_NODELIST");
	int fd, len, ok = -1;
	ssize_t n;

	if (!node || !*node) {
		/* As the agent names its node without SLURMD_NODENAME. */
		if (gethostname(host, sizeof(host)) != 0)
			return -1;
		host[sizeof(host) - 1] = '\0';
		host[strcspn(host, ".")] = '\0';
		node = host;
	}
	len = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/agent@%s.sock", state_dir, node);
	if (len < 0 || (size_t)len >= sizeof(addr.sun_path))
		return -1;
	if (gpus && (strlen(gpus) > 1024 || !plain(gpus)))
		return -1;
	if (nodes && (strlen(nodes) > MAX_NODES_LEN || !plain(nodes)))
		nodes = NULL; /* the agent asks Slurm instead */
	len = snprintf(msg, sizeof(msg), "{\"op\":\"%s\",\"job_id\":%s", op, id);
	if (strcmp(op, "start") == 0 && strcmp(uid, "-1") != 0)
		len += snprintf(msg + len, sizeof(msg) - (size_t)len, ",\"uid\":%s", uid);
	if (gpus)
		len += snprintf(msg + len, sizeof(msg) - (size_t)len, ",\"gpus\":\"%s\",\"gpus_given\":true", gpus);
	if (sluid) /* checked by job_sluid: no character that needs escaping */
		len += snprintf(msg + len, sizeof(msg) - (size_t)len, ",\"sluid\":\"%s\"", sluid);
	if (nodes && *nodes)
		len += snprintf(msg + len, sizeof(msg) - (size_t)len, ",\"nodes\":\"%s\"", nodes);
	len += snprintf(msg + len, sizeof(msg) - (size_t)len, "}\n");
	if (len <= 0 || (size_t)len >= sizeof(msg))
		return -1;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
	    send(fd, msg, (size_t)len, MSG_NOSIGNAL) == len) {
		n = recv(fd, reply, sizeof(reply) - 1, 0);
		if (n >= 3 && memcmp(reply, "ok\n", 3) == 0)
			ok = 0;
	}
	close(fd);
	return ok;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	char id[16], uid[24];
	const char *sluid;

	parse_args(ac, av);
	if (opted_out(sp))
		return 0;
	if (job_ids(sp, id, sizeof(id), uid, sizeof(uid)) != 0) {
		slurm_error("jobsight: job_prolog: no job id; not starting %s", agent_path);
		return 0;
	}
	sluid = job_sluid("job_prolog");
	if (hand_over("start", id, uid, sluid) == 0)
		return 0;
	char *argv[] = { (char *)agent_path, "start", "--config", (char *)config_path,
			 "--job-id", id, "--uid", uid, NULL };
	spawn(argv, sluid);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char id[16], uid[24];
	const char *sluid;

	parse_args(ac, av);
	if (opted_out(sp))
		return 0;
	if (job_ids(sp, id, sizeof(id), uid, sizeof(uid)) != 0) {
		slurm_error("jobsight: job_epilog: no job id; not running %s stop", agent_path);
		return 0;
	}
	sluid = job_sluid("job_epilog");
	if (hand_over("stop", id, uid, sluid) == 0)
		return 0;
	char *argv[] = { (char *)agent_path, "stop", "--config", (char *)config_path,
			 "--job-id", id, NULL };
	spawn(argv, sluid);
	return 0;
}

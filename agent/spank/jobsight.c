/*
 * jobsight.c - SPANK plugin that hands every job to its node's Jobsight agent.
 *
 * plugstack.conf:
 *   optional /usr/lib/x86_64-linux-gnu/slurm-wlm/jobsight.so agent=/usr/sbin/jobsight-agent config=/etc/jobsight/agent.yaml [state_dir=... (ignored: the agent reads its own)]
 *
 * slurm_spank_job_prolog (slurmd context, as root, outside the job's cgroup)
 * spawns "AGENT start --config CONFIG --job-id ID --uid UID" fully detached;
 * slurm_spank_job_epilog spawns "AGENT stop --config CONFIG --job-id ID".
 * Each hands its job to the node's agent process over a Unix socket in
 * STATE_DIR, or, when none runs, becomes it (one per node: the agent takes
 * a lock); the agent exits by itself once the node has no job left.
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
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(jobsight, 1);

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
static void spawn(char *const argv[])
{
	static const char *keep[] = { "SLURM_CONF", "SLURMD_NODENAME", "SLURM_CLUSTER_NAME", "SLURM_JOB_GPUS", "TZ", NULL };
	static char envbuf[8][4096];
	char *env[8];
	int n = 0;
	long maxfd;
	pid_t pid;
	int status;

	if (access(argv[0], X_OK) != 0) {
		slurm_error("jobsight: agent %s is not executable (%s); job runs without monitoring",
			    argv[0], strerror(errno));
		return;
	}
	env[n++] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
	for (int i = 0; keep[i] && n < 7; i++) {
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

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	char id[16], uid[24];

	parse_args(ac, av);
	if (opted_out(sp))
		return 0;
	if (job_ids(sp, id, sizeof(id), uid, sizeof(uid)) != 0) {
		slurm_error("jobsight: job_prolog: no job id; not starting %s", agent_path);
		return 0;
	}
	char *argv[] = { (char *)agent_path, "start", "--config", (char *)config_path,
			 "--job-id", id, "--uid", uid, NULL };
	spawn(argv);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char id[16], uid[24];

	parse_args(ac, av);
	if (opted_out(sp))
		return 0;
	if (job_ids(sp, id, sizeof(id), uid, sizeof(uid)) != 0) {
		slurm_error("jobsight: job_epilog: no job id; not running %s stop", agent_path);
		return 0;
	}
	char *argv[] = { (char *)agent_path, "stop", "--config", (char *)config_path,
			 "--job-id", id, NULL };
	spawn(argv);
	return 0;
}

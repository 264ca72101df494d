/*
 * brokerscope: a tiny, read-only Jolokia JVM agent.
 *
 * Serves the real Jolokia protocol (jolokia-core 1.7.1, Debian package libjolokia-core-java) over the
 * JDK's built-in com.sun.net.httpserver.HttpServer. Only read/search/list/version are allowed.
 *
 * Usage: -javaagent:/path/brokerscope-jolokia-agent.jar=host=127.0.0.1,port=8778,path=/jolokia
 *
 * Options (comma separated key=value):
 *   host          bind address (default 127.0.0.1)
 *   port          TCP port, 0 = pick a free one (default 8778)
 *   path          context path (default /jolokia)
 *   user          enables HTTP Basic auth (together with passwordFile)
 *   passwordFile  file whose first line is the password
 *   realm         Basic auth realm (default jolokia)
 *   strictOrigin  true|false (default false): requests without Origin or Referer get HTTP 403
 *   portFile      once listening, the bound port is written to this file (atomically)
 *   threads       HTTP worker threads (default 4)
 *   debug         true|false: Jolokia debug logging to stderr
 *   any other Jolokia global config key (e.g. agentId, mimeType, maxDepth, maxObjects, canonicalNaming,
 *   allowErrorDetails, includeStackTrace) is passed to org.jolokia.config.Configuration.
 *   Defaults differing from Jolokia 1.7.1: includeStackTrace=false, discoveryEnabled=false.
 *
 * All threads are daemon threads: the agent never keeps a JVM alive.
 * Run the JVM with -Dsun.net.httpserver.nodelay=true, otherwise keep-alive requests stall ~40 ms.
 */
package brokerscope.jolokia;

import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpContext;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.instrument.Instrumentation;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.management.ObjectName;
import javax.management.RuntimeMBeanException;

import org.jolokia.backend.BackendManager;
import org.jolokia.config.ConfigKey;
import org.jolokia.config.Configuration;
import org.jolokia.http.HttpRequestHandler;
import org.jolokia.restrictor.AllowAllRestrictor;
import org.jolokia.util.LogHandler;
import org.jolokia.util.RequestType;
import org.json.simple.JSONAware;
import org.json.simple.JSONObject;

public final class JolokiaAgent {

    private static volatile HttpServer server;

    private JolokiaAgent() {
    }

    /** -javaagent entry point. */
    public static void premain(String agentArgs, Instrumentation inst) {
        startQuietly(agentArgs);
    }

    /** Dynamic attach entry point. */
    public static void agentmain(String agentArgs, Instrumentation inst) {
        startQuietly(agentArgs);
    }

    /**
     * Stand-alone mode for tests: {@code java -javaagent:agent.jar=... -jar agent.jar}
     * keeps the JVM alive until stdin reaches EOF (or the process is killed).
     */
    public static void main(String[] args) throws IOException {
        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // just wait
        }
    }

    private static void startQuietly(String agentArgs) {
        try {
            start(agentArgs);
        } catch (Throwable t) {
            // Never take the host JVM down because of the monitoring agent.
            System.err.println("[brokerscope-jolokia] agent failed to start: " + t);
            t.printStackTrace();
        }
    }

    static synchronized void start(String agentArgs) throws Exception {
        if (server != null) {
            return;
        }
        Map<String, String> opts = parseOptions(agentArgs);
        String host = opts.getOrDefault("host", "127.0.0.1");
        int port = Integer.parseInt(opts.getOrDefault("port", "8778"));
        String path = opts.getOrDefault("path", "/jolokia");
        if (!path.startsWith("/")) {
            path = "/" + path;
        }
        while (path.length() > 1 && path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        boolean strictOrigin = Boolean.parseBoolean(opts.getOrDefault("strictOrigin", "false"));
        boolean debug = Boolean.parseBoolean(opts.getOrDefault("debug", "false"));
        String user = opts.get("user");
        String passwordFile = opts.get("passwordFile");
        String realm = opts.getOrDefault("realm", "jolokia");
        String portFile = opts.get("portFile");
        int threads = Integer.parseInt(opts.getOrDefault("threads", "4"));

        LogHandler log = new StderrLogHandler(debug);

        Map<String, String> jolokiaConfig = new HashMap<>();
        jolokiaConfig.put(ConfigKey.AGENT_CONTEXT.getKeyValue(), path);
        jolokiaConfig.put(ConfigKey.DISCOVERY_ENABLED.getKeyValue(), "false");
        jolokiaConfig.put(ConfigKey.DEBUG.getKeyValue(), Boolean.toString(debug));
        jolokiaConfig.put(ConfigKey.AGENT_TYPE.getKeyValue(), "jvm");
        jolokiaConfig.put(ConfigKey.AGENT_DESCRIPTION.getKeyValue(), "brokerscope read-only agent");
        jolokiaConfig.put(ConfigKey.AGENT_ID.getKeyValue(), ProcessHandle.current().pid() + "-brokerscope-jvm");
        // Jolokia 1.x default is true; stack traces only on request (?includeStackTrace=true)
        jolokiaConfig.put(ConfigKey.INCLUDE_STACKTRACE.getKeyValue(), "false");
        for (Map.Entry<String, String> e : opts.entrySet()) {
            ConfigKey key = ConfigKey.getGlobalConfigKey(e.getKey());
            if (key != null && key != ConfigKey.USER && key != ConfigKey.PASSWORD
                    && key != ConfigKey.AGENT_CONTEXT) {
                jolokiaConfig.put(key.getKeyValue(), e.getValue());
            }
        }
        Configuration config = new Configuration();
        config.updateGlobalConfiguration(jolokiaConfig);

        ReadOnlyRestrictor restrictor = new ReadOnlyRestrictor(strictOrigin);
        // lazy=true: Jolokia's server detectors run on the first request, not inside premain
        BackendManager backend = new BackendManager(config, log, restrictor, true);
        HttpRequestHandler requestHandler = new HttpRequestHandler(config, backend, log);

        HttpServer httpServer = HttpServer.create(new InetSocketAddress(host, port), 0);
        HttpContext context = httpServer.createContext(path, new Handler(path, config, requestHandler, log));
        if (user != null) {
            if (passwordFile == null) {
                throw new IllegalArgumentException("option 'user' needs 'passwordFile'");
            }
            String password = readFirstLine(Paths.get(passwordFile));
            context.setAuthenticator(new Basic(realm, user, password));
        }
        httpServer.setExecutor(newDaemonExecutor(threads));

        // The JDK starts its dispatcher thread with the daemon flag of the calling thread:
        // start from a daemon thread so that the HTTP server never keeps the JVM alive.
        Thread starter = new Thread(httpServer::start, "brokerscope-jolokia-starter");
        starter.setDaemon(true);
        starter.start();
        starter.join();
        server = httpServer;

        int boundPort = httpServer.getAddress().getPort();
        if (portFile != null) {
            Path target = Paths.get(portFile).toAbsolutePath();
            Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
            Files.write(tmp, (boundPort + "\n").getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        log.info("listening on http://" + host + ":" + boundPort + path + "/"
                + (user != null ? " (basic auth)" : "") + (strictOrigin ? " (strict origin)" : "")
                + " read-only, jolokia-core " + jolokiaVersion());
    }

    private static String jolokiaVersion() {
        try {
            return org.jolokia.Version.getAgentVersion();
        } catch (Throwable t) {
            return "?";
        }
    }

    static Map<String, String> parseOptions(String agentArgs) {
        Map<String, String> opts = new LinkedHashMap<>();
        if (agentArgs == null || agentArgs.isBlank()) {
            return opts;
        }
        for (String part : agentArgs.split(",")) {
            if (part.isBlank()) {
                continue;
            }
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("bad agent option '" + part + "' (expected key=value)");
            }
            opts.put(part.substring(0, eq).trim(), part.substring(eq + 1).trim());
        }
        return opts;
    }

    private static String readFirstLine(Path p) throws IOException {
        List<String> lines = Files.readAllLines(p, StandardCharsets.UTF_8);
        return lines.isEmpty() ? "" : lines.get(0).trim();
    }

    private static ExecutorService newDaemonExecutor(int threads) {
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor ex = new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "brokerscope-jolokia-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        ex.allowCoreThreadTimeOut(true);
        return ex;
    }

    /** Read-only policy: read, search, list, version. exec/write (and notifications) are denied. */
    static final class ReadOnlyRestrictor extends AllowAllRestrictor {
        private final boolean strictOrigin;

        ReadOnlyRestrictor(boolean strictOrigin) {
            this.strictOrigin = strictOrigin;
        }

        @Override
        public boolean isTypeAllowed(RequestType type) {
            return type == RequestType.READ || type == RequestType.SEARCH
                    || type == RequestType.LIST || type == RequestType.VERSION;
        }

        @Override
        public boolean isAttributeWriteAllowed(ObjectName name, String attribute) {
            return false;
        }

        @Override
        public boolean isOperationAllowed(ObjectName name, String operation) {
            return false;
        }

        @Override
        public boolean isOriginAllowed(String origin, boolean strictCheck) {
            if (strictCheck && strictOrigin) {
                return origin != null && !origin.isEmpty();
            }
            return true;
        }
    }

    /** HTTP Basic auth with a constant-time comparison. */
    static final class Basic extends BasicAuthenticator {
        private final byte[] user;
        private final byte[] password;

        Basic(String realm, String user, String password) {
            super(realm);
            this.user = user.getBytes(StandardCharsets.UTF_8);
            this.password = password.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public boolean checkCredentials(String u, String p) {
            boolean okUser = MessageDigest.isEqual(user, u.getBytes(StandardCharsets.UTF_8));
            boolean okPass = MessageDigest.isEqual(password, p.getBytes(StandardCharsets.UTF_8));
            return okUser & okPass;
        }
    }

    static final class StderrLogHandler implements LogHandler {
        private final boolean debug;

        StderrLogHandler(boolean debug) {
            this.debug = debug;
        }

        @Override
        public void debug(String message) {
            if (debug) {
                System.err.println("[brokerscope-jolokia] DEBUG " + message);
            }
        }

        @Override
        public void info(String message) {
            System.err.println("[brokerscope-jolokia] INFO " + message);
        }

        @Override
        public void error(String message, Throwable t) {
            System.err.println("[brokerscope-jolokia] ERROR " + message);
            if (t != null && debug) {
                t.printStackTrace();
            }
        }
    }

    /**
     * Maps HTTP to org.jolokia.http.HttpRequestHandler like Jolokia's own JVM agent: a Jolokia answer
     * (including per-request errors such as 404/403/500 items) is sent with HTTP 200 and the status
     * in the JSON body. HTTP-level statuses: 401 (auth), 403 (origin/remote policy), 404 (outside the
     * context path), 405 (method other than GET/POST/OPTIONS).
     */
    static final class Handler implements HttpHandler {
        private static final Pattern CHARSET = Pattern.compile(".*;\\s*charset=([^;,]+)\\s*.*",
                Pattern.CASE_INSENSITIVE);

        private final String context;
        private final Configuration config;
        private final HttpRequestHandler requestHandler;
        private final LogHandler log;

        Handler(String context, Configuration config, HttpRequestHandler requestHandler, LogHandler log) {
            this.context = context;
            this.config = config;
            this.requestHandler = requestHandler;
            this.log = log;
        }

        @Override
        public void handle(HttpExchange exchange) throws IOException {
            try {
                doHandle(exchange);
            } catch (Throwable t) {
                log.error("unexpected failure handling " + exchange.getRequestURI() + ": " + t, t);
                try {
                    sendText(exchange, 500, "500 (Internal Server Error)\n");
                } catch (Throwable ignored) {
                    // response may already be committed
                }
            } finally {
                exchange.close();
            }
        }

        private void doHandle(HttpExchange exchange) throws IOException {
            URI uri = exchange.getRequestURI();
            String rawPath = uri.getPath() == null ? "" : uri.getPath();
            if (!(rawPath.equals(context) || rawPath.startsWith(context + "/") || "/".equals(context))) {
                drain(exchange);
                sendText(exchange, 404, "404 (Not Found)\n");
                return;
            }
            Map<String, String[]> params = parseQuery(uri.getRawQuery());
            String method = exchange.getRequestMethod();
            Headers reqHeaders = exchange.getRequestHeaders();
            String origin = reqHeaders.getFirst("Origin");
            if (origin == null) {
                origin = reqHeaders.getFirst("Referer");
            }
            if (origin != null) {
                origin = origin.replaceAll("[\\n\\r]*", "");
            }
            try {
                InetSocketAddress remote = exchange.getRemoteAddress();
                requestHandler.checkAccess(null, remote.getAddress().getHostAddress(), origin);
            } catch (SecurityException e) {
                drain(exchange);
                sendJson(exchange, 403, errorJson(e, params), params);
                return;
            }

            JSONAware json;
            if ("OPTIONS".equalsIgnoreCase(method)) {
                Map<String, String> cors = requestHandler.handleCorsPreflightRequest(
                        reqHeaders.getFirst("Origin"), reqHeaders.getFirst("Access-Control-Request-Headers"));
                Headers h = exchange.getResponseHeaders();
                for (Map.Entry<String, String> e : cors.entrySet()) {
                    h.set(e.getKey(), e.getValue());
                }
                h.set("Allow", "GET, POST, OPTIONS");
                exchange.sendResponseHeaders(200, -1);
                return;
            } else if (!"GET".equalsIgnoreCase(method) && !"POST".equalsIgnoreCase(method)) {
                drain(exchange);
                exchange.getResponseHeaders().set("Allow", "GET, POST, OPTIONS");
                sendText(exchange, 405, "405 (Method Not Allowed)\n");
                return;
            }
            setCommonHeaders(exchange, reqHeaders.getFirst("Origin"));
            try {
                if ("GET".equalsIgnoreCase(method)) {
                    json = requestHandler.handleGetRequest(uri.toString(), pathInfo(rawPath), params);
                } else {
                    String encoding = "UTF-8";
                    String ctype = reqHeaders.getFirst("Content-Type");
                    if (ctype != null) {
                        Matcher m = CHARSET.matcher(ctype);
                        if (m.matches()) {
                            encoding = m.group(1).trim().replace("\"", "");
                        }
                    }
                    try (InputStream body = exchange.getRequestBody()) {
                        json = requestHandler.handlePostRequest(uri.toString(), body, encoding, params);
                    }
                }
            } catch (Throwable t) {
                Throwable cause = t instanceof RuntimeMBeanException
                        ? ((RuntimeMBeanException) t).getTargetException() : t;
                json = errorJson(cause, params);
            }
            sendJson(exchange, 200, json, params);
        }

        /** Jolokia error JSON for request-level failures; stacktrace only if asked for. */
        private JSONAware errorJson(Throwable t, Map<String, String[]> params) {
            JSONObject json = requestHandler.handleThrowable(t);
            String[] st = params.get(ConfigKey.INCLUDE_STACKTRACE.getKeyValue());
            boolean wanted = st != null && st.length > 0 ? Boolean.parseBoolean(st[0])
                    : Boolean.parseBoolean(config.get(ConfigKey.INCLUDE_STACKTRACE));
            if (!wanted) {
                json.remove("stacktrace");
            }
            return json;
        }

        private String pathInfo(String path) {
            String p = path.length() >= context.length() && !"/".equals(context)
                    ? path.substring(context.length()) : path;
            while (p.startsWith("/") && p.length() > 1) {
                p = p.substring(1);
            }
            return p;
        }

        private void setCommonHeaders(HttpExchange exchange, String origin) {
            Headers h = exchange.getResponseHeaders();
            String allowed = requestHandler.extractCorsOrigin(origin);
            if (allowed != null) {
                h.set("Access-Control-Allow-Origin", allowed);
                h.set("Access-Control-Allow-Credentials", "true");
            }
            h.set("Cache-Control", "no-cache");
            h.set("Pragma", "no-cache");
        }

        private String mimeType(Map<String, String[]> params) {
            String[] fromQuery = params.get(ConfigKey.MIME_TYPE.getKeyValue());
            String mime = fromQuery != null && fromQuery.length > 0 ? fromQuery[0] : config.get(ConfigKey.MIME_TYPE);
            if (!"application/json".equals(mime) && !"text/plain".equals(mime)) {
                mime = "text/plain";
            }
            return mime;
        }

        private void sendJson(HttpExchange exchange, int status, JSONAware json, Map<String, String[]> params)
                throws IOException {
            if (json == null) {
                json = errorJson(new Exception("Internal error: no response"), params);
            }
            byte[] body = json.toJSONString().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", mimeType(params) + "; charset=utf-8");
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }

        private static void sendText(HttpExchange exchange, int status, String text) throws IOException {
            byte[] body = text.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }

        private static void drain(HttpExchange exchange) {
            try (InputStream in = exchange.getRequestBody()) {
                byte[] buf = new byte[4096];
                while (in.read(buf) >= 0) {
                    // discard
                }
            } catch (IOException ignored) {
                // nothing to do
            }
        }

        private static Map<String, String[]> parseQuery(String rawQuery) {
            Map<String, List<String>> tmp = new LinkedHashMap<>();
            if (rawQuery != null && !rawQuery.isEmpty()) {
                for (String pair : rawQuery.split("&")) {
                    if (pair.isEmpty()) {
                        continue;
                    }
                    int eq = pair.indexOf('=');
                    String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                    String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                    tmp.computeIfAbsent(k, x -> new ArrayList<>()).add(v);
                }
            }
            Map<String, String[]> out = new HashMap<>();
            for (Map.Entry<String, List<String>> e : tmp.entrySet()) {
                out.put(e.getKey(), e.getValue().toArray(new String[0]));
            }
            return out;
        }
    }
}

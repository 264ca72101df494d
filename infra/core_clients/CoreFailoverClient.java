package brokerscope.clients;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Queue;
import javax.jms.Session;
import javax.jms.TextMessage;

import org.apache.activemq.artemis.api.core.TransportConfiguration;
import org.apache.activemq.artemis.api.core.client.ClientSessionFactory;
import org.apache.activemq.artemis.jms.client.ActiveMQConnection;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * A real Artemis Core JMS client (what AMQ 7 / JBoss EAP applications run) that fails over with
 * the broker pair through its connection URL ({@code (tcp://a,tcp://b)?ha=true&reconnectAttempts=…}),
 * writing a ledger of JSON lines that Python reads (infra/core_clients.py).
 *
 * <pre>
 * java -cp … brokerscope.clients.CoreFailoverClient produce|consume URL QUEUE USER LEDGER [RATE]
 * </pre>
 * The password comes from the environment ({@code ARTEMIS_PASSWORD}), never the command line. The
 * client runs until SIGTERM (a shutdown hook lets it finish the message in hand, close the
 * connection and write {@code stopped}) or until its failover fails for good.
 *
 * <p>produce: persistent messages "0", "1", … at RATE per second, each send synchronous (the Core
 * client blocks a durable send until the broker has stored it). A send that throws is
 * indeterminate (it may be stored) and is sent again with the same id, as an application would.
 * consume: a transacted session, one commit per message; a commit that throws is a rollback, the
 * message comes again.
 *
 * <p>Ledger events ({@code "t"} epoch seconds, {@code "ev"}): start, connected (remote address),
 * send / acked / send-failed (id), received (id, redelivered) / committed / rolled-back (id),
 * failover (the FailoverEventListener's type: FAILURE_DETECTED, FAILOVER_COMPLETED,
 * FAILOVER_FAILED, with the connector it points at then), exception (the ExceptionListener's),
 * stopped. SIGQUIT prints the JVM's threads to its log (a client stuck in a call shows where).
 */
public final class CoreFailoverClient {

    private final Writer ledger;
    private final AtomicBoolean stopping = new AtomicBoolean();
    private volatile boolean failedForGood;

    private CoreFailoverClient(String path) throws IOException {
        ledger = new OutputStreamWriter(new FileOutputStream(path, true), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: produce|consume URL QUEUE USER LEDGER [RATE]");
            System.exit(2);
        }
        String mode = args[0], url = args[1], queue = args[2], user = args[3];
        double rate = args.length > 5 ? Double.parseDouble(args[5]) : 50.0;
        CoreFailoverClient client = new CoreFailoverClient(args[4]);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            client.stopping.set(true);
            try {
                done.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }, "stop-on-sigterm"));
        int status = 0;
        try {
            client.run(mode, url, queue, user, System.getenv("ARTEMIS_PASSWORD"), rate);
        } catch (Exception e) {
            client.log("\"ev\":\"fatal\",\"error\":" + json(describe(e)));
            e.printStackTrace();
            status = 1;
        }
        client.log("\"ev\":\"stopped\"");
        client.ledger.close();
        done.countDown();
        System.exit(status);  // during a SIGTERM shutdown this waits for the hook, which is done now
    }

    private void run(String mode, String url, String queueName, String user, String password, double rate)
            throws JMSException, InterruptedException {
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url, user, password);
        try (Connection connection = factory.createConnection()) {
            ActiveMQConnection amq = (ActiveMQConnection) connection;
            ClientSessionFactory sessions = amq.getSessionFactory();
            amq.setFailoverListener(type -> {
                log("\"ev\":\"failover\",\"type\":" + json(type.name()) + ",\"remote\":" + json(remote(sessions)));
                if (type.name().equals("FAILOVER_FAILED")) {
                    failedForGood = true;
                }
            });
            connection.setExceptionListener(e -> log("\"ev\":\"exception\",\"code\":" + json(e.getErrorCode())
                    + ",\"error\":" + json(describe(e))));
            log("\"ev\":\"start\",\"mode\":" + json(mode) + ",\"url\":" + json(url));
            log("\"ev\":\"connected\",\"remote\":" + json(remote(sessions)));
            if (mode.equals("produce")) {
                produce(connection, queueName, rate);
            } else if (mode.equals("consume")) {
                consume(connection, queueName);
            } else {
                throw new IllegalArgumentException("mode must be produce or consume, not " + mode);
            }
        }
    }

    private void produce(Connection connection, String queueName, double rate) throws JMSException, InterruptedException {
        Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Queue queue = session.createQueue(queueName);
        MessageProducer producer = session.createProducer(queue);
        producer.setDeliveryMode(DeliveryMode.PERSISTENT);
        long periodNanos = (long) (1e9 / rate);
        long next = System.nanoTime();
        for (long id = 0; !stopping.get() && !failedForGood; ) {
            log("\"ev\":\"send\",\"id\":" + id);
            try {
                producer.send(session.createTextMessage(Long.toString(id)));
                log("\"ev\":\"acked\",\"id\":" + id);
                id++;
            } catch (JMSException e) {  // indeterminate: stored or not; the same id goes again
                log("\"ev\":\"send-failed\",\"id\":" + id + ",\"error\":" + json(describe(e)));
            }
            next += periodNanos;
            long wait = next - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            } else {
                next = System.nanoTime();
            }
        }
    }

    private void consume(Connection connection, String queueName) throws JMSException {
        Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
        MessageConsumer consumer = session.createConsumer(session.createQueue(queueName));
        connection.start();
        while (!stopping.get() && !failedForGood) {
            String id = null;
            try {
                Message m = consumer.receive(200);
                if (m == null) {
                    continue;
                }
                id = ((TextMessage) m).getText();
                log("\"ev\":\"received\",\"id\":" + id + ",\"redelivered\":" + m.getJMSRedelivered());
                session.commit();
                log("\"ev\":\"committed\",\"id\":" + id);
            } catch (JMSException e) {  // a failed commit is a rollback: the message comes again
                log("\"ev\":\"rolled-back\",\"id\":" + (id == null ? "null" : id) + ",\"error\":" + json(describe(e)));
            }
        }
    }

    private synchronized void log(String fields) {
        try {
            ledger.write(String.format(Locale.ROOT, "{\"t\":%.3f,%s}%n", System.currentTimeMillis() / 1000.0, fields));
            ledger.flush();
        } catch (IOException e) {
            throw new IllegalStateException("cannot write the ledger", e);
        }
    }

    /**
     * The broker the factory's connector points at now (host:port). Not {@code getConnection()}: when
     * the connection is down, that one tries to establish a new one under the factory's connection
     * lock — from a failover listener, on the failover thread. A plain field read instead.
     */
    private static String remote(ClientSessionFactory sessions) {
        TransportConfiguration c = sessions.getConnectorConfiguration();
        return c == null ? null : c.getParams().get("host") + ":" + c.getParams().get("port");
    }

    private static String describe(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    private static String json(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }
}

// A JVM that does nothing but host the Jolokia agent, for client tests (started with the JDK's
// single-file source launcher: `java -javaagent:... IdleMain.java`).
public class IdleMain {
    public static void main(String[] args) throws Exception {
        Thread.sleep(Long.MAX_VALUE);
    }
}

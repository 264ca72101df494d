package brokerscope.ballast;

/**
 * A large live set for a JVM, loaded with -javaagent (the gc-pause drill of brokerscope).
 *
 * premain builds small objects (about 24 bytes each) totalling the given number of MiB, held by
 * an array kept reachable from a static field for the life of the JVM, each pointing at another
 * one chosen at random (so following the references jumps all over the heap, as a long-lived
 * broker's object graph does, whatever order a copying collection leaves them in). A full
 * collection must mark, and then fix up the reference of, every object, cache miss after cache
 * miss, so its stop-the-world pause grows with the live set: what a broker holding millions of
 * small messages in memory does to its collector.
 *
 *   -javaagent:gc-ballast.jar=mb=300
 */
public final class GcBallast {
    static final class Node {
        Node next;
        int value;
        Node(Node next, int value) { this.next = next; this.value = value; }
    }

    static volatile Node head;
    static volatile Node[] nodesArray;
    private static final int NODE_BYTES = 24;

    private GcBallast() {}

    public static void premain(String args) {
        long mb = 256;
        if (args != null) {
            for (String kv : args.split(",")) {
                String[] p = kv.split("=", 2);
                if (p.length == 2 && p[0].trim().equals("mb")) mb = Long.parseLong(p[1].trim());
            }
        }
        long nodes = mb * 1024L * 1024L / NODE_BYTES;
        long t0 = System.nanoTime();
        Node[] all = new Node[(int) nodes];
        for (int i = 0; i < all.length; i++) all[i] = new Node(null, i);
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(42);
        for (Node n : all) n.next = all[rnd.nextInt(all.length)];  // every node points at a random one
        nodesArray = all;
        head = all.length > 0 ? all[0] : null;
        System.out.println("[brokerscope-ballast] live set of " + nodes + " nodes (~" + mb + " MiB) built in "
                + (System.nanoTime() - t0) / 1_000_000 + " ms");
    }

    /** Keeps a bare JVM alive for trying the ballast out: java -javaagent:jar=mb=N -jar jar. */
    public static void main(String[] args) throws Exception {
        System.in.read();
    }
}

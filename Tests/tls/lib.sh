# Shared by Tests/tls/run.sh (the suite's TLS checks) and Tests/bench/tls-front.sh (fm-bench's TLS front): a throwaway
# CA and certificates made with the openssl CLI, a free loopback port, and the start of an nginx.conf. Source it.

# tls_ca DIR NAME PREFIX: a self-signed CA called NAME, DIR/PREFIX.key and DIR/PREFIX.crt (valid two days).
tls_ca() {
    openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj "/CN=$2" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$1/$3.key" -out "$1/$3.crt" 2>/dev/null
}

# tls_issue DIR PREFIX CN EXTENSION…: DIR/PREFIX.key and DIR/PREFIX.crt for CN, signed by DIR/ca.{crt,key}, with
# these extension lines.
tls_issue() {
    local dir=$1 prefix=$2 cn=$3
    shift 3
    openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=$cn" -keyout "$dir/$prefix.key" -out "$dir/$prefix.csr" 2>/dev/null
    printf '%s\n' "$@" > "$dir/$prefix.ext"
    openssl x509 -req -sha256 -days 2 -in "$dir/$prefix.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
        -extfile "$dir/$prefix.ext" -out "$dir/$prefix.crt" 2>/dev/null
}

# tls_ca_and_server DIR NAME: the CA DIR/ca.{crt,key} called NAME and DIR/server.{crt,key} for 127.0.0.1 and localhost.
tls_ca_and_server() {
    tls_ca "$1" "$2" ca
    tls_issue "$1" server localhost "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
        "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth"
}

# tls_free_port: a loopback port free a moment ago.
tls_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# tls_nginx_head WORK CONNECTIONS MAX_BODY: an nginx.conf up to and into its http block (one worker, its pid, log and
# temporary files under WORK, which must hold a directory tmp), for the caller to add upstreams and servers and close.
tls_nginx_head() {
    cat <<CONF
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections $2; }
http {
    access_log off;
    client_body_temp_path $1/tmp/body;
    proxy_temp_path $1/tmp/proxy;
    fastcgi_temp_path $1/tmp/fastcgi;
    uwsgi_temp_path $1/tmp/uwsgi;
    scgi_temp_path $1/tmp/scgi;
    client_max_body_size $3;
CONF
}

# tls_nginx_server PORT DIR UPSTREAM [SERVER_LINES [LOCATION_LINES]]: a server block terminating TLS on 127.0.0.1:PORT
# with DIR/server.{crt,key} and proxying everything to UPSTREAM over HTTP/1.1 (kept alive, X-Forwarded-Proto/Host/For
# set, Location headers left alone), with these extra lines in the server and in its location.
tls_nginx_server() {
    cat <<CONF
    server {
        listen 127.0.0.1:$1 ssl;
        server_name localhost;
        ssl_certificate $2/server.crt;
        ssl_certificate_key $2/server.key;
${4:-}
        location / {
            proxy_pass $3;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$http_host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_redirect off;
${5:-}
        }
    }
CONF
}

"""The redaction corpus: what agents write about secrets (must come back byte for byte) and
credentials in their real formats (must be redacted). Data only, shared by
tests/rooms/test_redaction_corpus.py and `make bench` (bench/redaction.py).

Every credential here is fake: random characters in the real format, assembled at import
time from pieces and a seeded hash, so that this file does not itself hold strings that
secret scanners (ours, or a forge's push protection) would flag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any


def token(alphabet: str, length: int, seed: str) -> str:
    """A deterministic string of `length` characters of `alphabet`."""
    digest = b"".join(
        hashlib.sha512(f"{seed}/{i}".encode()).digest() for i in range(length // 64 + 1)
    )
    return "".join(alphabet[b % len(alphabet)] for b in digest[:length])


UPPER_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789"
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


SHA1 = hashlib.sha1(b"roomservice").hexdigest()
SHA256 = hashlib.sha256(b"release.tar.gz").hexdigest()
MD5 = hashlib.md5(b"avatar.png").hexdigest()
UUID4 = str(uuid.UUID(int=0x7D44_4840_9DC0_41E8_A1F3_52B6_0C3A_9E11))
UUID_OTHER = str(uuid.UUID(int=0x0F1E_2D3C_4B5A_4968_8776_6554_4332_2110))
ULID = "01HF8Z3K9V6TQ4M2W7XJ5R8N1P"
BLOB = base64.b64encode(hashlib.sha512(b"bytes").digest() * 2).decode()


# --- Benign: what agents write about secrets -------------------------------------------

BENIGN_TEXTS: list[str] = [
    # The outside check's sentences, and their kin.
    'api_key="YOUR_API_KEY"',
    "secret_key = settings.SECRET_KEY",
    '"password_hash": "string"',
    "passwd: null",
    '{"email": "string", "password": "string"}',
    'password = "changeme"',
    'token = "<token>"',
    'API_KEY="${API_KEY}"',
    "api_key = os.environ['API_KEY']",
    'api_key = os.environ.get("API_KEY", "")',
    "SECRET_KEY = env('DJANGO_SECRET_KEY')",
    "password = get_password()",
    'password = "${DB_PASSWORD}"',
    'password = "********"',
    '"password": "***"',
    "client_secret: <your-client-secret>",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "apiKey: process.env.OPENAI_API_KEY!,",
    "const apiKey = process.env.STRIPE_SECRET_KEY;",
    "password: !vault |",
    "password: {{ vault_db_password }}",
    "secret_key_base: <%= ENV['SECRET_KEY_BASE'] %>",
    "DB_PASSWORD=$(cat /run/secrets/db_password)",
    "password_file: /run/secrets/postgres_password",
    "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY",
    "secret_ref: projects/acme/secrets/db-password/versions/latest",
    "api_key: vault:secret/data/payments#api_key",
    "token: op://Engineering/GitHub/credential",
    "password = arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
    "Password: reset it from the dashboard",
    "the secret to fast builds is caching",
    "Token budget: 4096 tokens per call; max_tokens = 1024",
    "Passwords are hashed with PBKDF2 (Django's default hasher); never log them.",
    "Rotate the API key every 90 days; the key id is shown in the dashboard.",
    "We store api keys as SHA-256 digests and show them once, masked, with scopes.",
    "The auth token is sent in the Authorization header as `Bearer <token>`.",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com/v1/rooms",
    'curl -H "Authorization: Bearer ${API_KEY}" https://api.example.com/v1/me',
    "Authorization: Bearer YOUR_ACCESS_TOKEN",
    "Authorization: Basic <base64 of user:password>",
    'headers = {"Authorization": f"Bearer {token}"}',
    "bearer token authentication is the only scheme the REST door accepts",
    "Basic authentication is disabled on the public endpoints.",
    "keyboard shortcuts: ctrl+k opens the key palette",
    "keyboard: qwerty layout",
    "password_min_length = 12",
    "PASSWORD_RESET_TIMEOUT = 259200",
    "AUTH_PASSWORD_VALIDATORS = [",
    "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
    "secret_id = 'a1b2c3d4'",
    f'key_id = "{UUID4}"',
    "token_type: bearer",
    '"token_type": "Bearer", "expires_in": 3600',
    f'"nextPageToken": "{_b64url(b"cursor:page=3;sort=created_at")}"',
    f"page_token = '{_b64url(b'offset=200')}'",
    f'idempotency_key = "{UUID_OTHER}"',
    f"request_id: {UUID4}",
    f"fixed in {SHA1}, see the PR",
    f"commit {SHA1[:12]} reverts the password policy change",
    f"sha256: {SHA256}",
    f"checksum = '{SHA256}'",
    f'"password_hash": "pbkdf2_sha256$600000${token(ALNUM, 22, "salt")}$'
    f'{base64.b64encode(hashlib.sha256(b"x").digest()).decode()}"',
    "password_hash = '$2b$12$" + token(ALNUM + "./", 53, "bcrypt") + "'",
    f'"avatar_md5": "{MD5}"',
    f'etag: W/"{MD5}"',
    f"ulid {ULID} created",
    f"blob {BLOB}",
    f"task {UUID4} is blocked by {UUID_OTHER}",
    f"key = 'rooms:{{{UUID4}}}:plan'",
    "docs at https://example.com/guide/setup?step=2#keys and http://localhost:8000/",
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app",
    "DATABASE_URL=postgres://user:password@localhost:5432/mydb",
    "REDIS_URL=redis://localhost:6379/0",
    "amqp://guest:guest@localhost:5672/",
    "postgres://postgres:postgres@localhost:5432/test",
    "mysql://root:<password>@127.0.0.1:3306/app",
    "https://user:pass@example.com/private (replace user and pass)",
    "git clone git@github.com:acme/roomservice.git",
    "https://github.com/acme/roomservice/pull/412#discussion_r1234567",
    "SELECT id, email FROM users WHERE password_reset_token IS NOT NULL;",
    "ALTER TABLE accounts ADD COLUMN api_key_digest char(64) NOT NULL;",
    "CREATE INDEX tokens_by_owner ON api_tokens (owner_id, created_at);",
    "class LoginSerializer(serializers.Serializer):",
    "    password = serializers.CharField(write_only=True)",
    "password: str = Field(..., min_length=8, description='the new password')",
    "api_key: SecretStr",
    "api_key: Optional[str] = None",
    "secret: SecretStr = SecretStr('')",
    "password?: string;",
    "interface Credentials { username: string; password: string }",
    "type Token = { accessToken: string; refreshToken: string; expiresAt: number }",
    "func (c *Client) SetToken(token string) { c.token = token }",
    'Password string `json:"password"`',
    "self.password = password",
    "token = request.headers['Authorization'].split(' ')[1]",
    "password = hashlib.sha256(raw.encode()).hexdigest()",
    "if not check_password(password, user.password_hash):",
    "secret = secrets.token_urlsafe(32)",
    "token = jwt.encode(claims, settings.JWT_SECRET, algorithm='HS256')",
    "const secret = await getSecret('payments/stripe')",
    'password := os.Getenv("DB_PASSWORD")',
    'String apiKey = System.getenv("API_KEY");',
    "PASSWORD=${PASSWORD:?set PASSWORD first}",
    "export API_TOKEN=",
    "API_TOKEN=xxxxxxxxxxxxxxxxxxxxxxxx",
    "SECRET_KEY=django-insecure-change-me",
    "STRIPE_SECRET_KEY=sk_live_...",
    "OPENAI_API_KEY=sk-...",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aws_secret_access_key = <your secret access key>",
    "MAILGUN_API_KEY=key-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "SLACK_WEBHOOK=https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "POSTGRES_PASSWORD=mysecretpassword",
    "MYSQL_ROOT_PASSWORD=example",
    "password: password123",
    "password: hunter2",
    "secret: top-secret",
    "token: your-token-here",
    "api_key: your_api_key_here",
    "client_secret: REPLACE_ME",
    "apikey=<API_KEY>",
    "auth: required",
    "auth: none",
    "--password-stdin < ~/.docker/password",
    "docker login --username ci --password-stdin",
    "psql --password --host db.internal",
    "npm config set //registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "[pypi]\nusername = __token__\npassword = <your PyPI token>",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "Keys start with -----BEGIN OPENSSH PRIVATE KEY----- and must never be pasted here.",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + token(B64, 43, "sshpub") + " ci@acme",
    "API calls go through APIGateway; see AccountKeyRotation.md",
    "rs_live_",
    "a key looks like rs_live_ then 43 characters",
    "users_live_dashboard_widget_count",
    "counters_share_of_voice_per_region",
    "SELECT * FROM users WHERE id = 42; BEGIN TRANSACTION; COMMIT;",
    "We agreed to migrate the billing service on Monday; Alice owns the schema change, and "
    "the key risk is the retry storm we saw last week. Passwords are out of scope.",
    "Use `secrets.compare_digest` for tokens; never `==`.",
    "The webhook secret (whsec_…) is shown once when the webhook is created.",
    "Keys are prefixed rs_live_, invites rs_inv_, share links rs_share_.",
    "GitHub tokens start with ghp_, gho_, ghs_ or github_pat_; Slack ones with xoxb-.",
    "Stripe secret keys look like sk_live_ followed by 24+ characters.",
    "sk-learn is not a key; neither is the sk- prefix alone",
    "AIza prefixed keys are Google API keys; restrict them by referrer.",
    "eyJ is how a base64 JSON object starts",
    "eyJhbGciOiJIUzI1NiJ9 is only a header",
    "Discord.Net.WebSocket.DiscordSocketClientConfiguration.GatewayIntents",
    "MicrosoftExtensionsLogging.Logging.AbstractionsForDependencyInjectionX",
    "timestamp 1700000000: job finished",
    "ACCESS_TOKEN_LIFETIME = timedelta(minutes=5)",
    "REFRESH_TOKEN_ROTATION = True",
    "auth_token_ttl_seconds: 900",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "hf_hub_download(repo_id='acme/model', filename='config.json')",
    "dapi_version = 2",
    "key-value store",
    "glpat- prefix",
    "pypi-AgE prefix",
    "the us-east-1 region",
    "sig=abc",
    # Escapes in ordinary text: URL-encoded queries and paths, JSON-escaped strings.
    "GET /search?q=rs%5Flive%5F+prefix&sort=created%5Fat&page=2",
    "https://example.com/files/my%20report%5Ffinal%2Dv2.pdf?download=1",
    "the key prefix is rs%5Flive%5F, then 43 characters",
    '{"name": "caf\\u00e9", "path": "C:\\\\users\\\\rs_live", "sep": "\\u005f"}',
    "100% done; 50%5F is not an escape we care about; \\u not followed by hex",
]

BENIGN_PAYLOADS: list[dict[str, Any]] = [
    {"request": {"email": "string", "password": "string"}, "response": {"token": "string"}},
    {
        "endpoint": "POST /v1/sessions",
        "request": {"username": "string", "password": "string", "otp": "string|null"},
        "response": {"access_token": "string", "refresh_token": "string", "expires_in": 3600},
    },
    {
        "type": "object",
        "required": ["email", "password"],
        "properties": {
            "email": {"type": "string", "format": "email"},
            "password": {"type": "string", "format": "password", "minLength": 12},
            "password_confirmation": {"type": "string", "format": "password"},
        },
    },
    {
        "components": {
            "securitySchemes": {
                "ApiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "oauth2": {
                    "type": "oauth2",
                    "flows": {
                        "clientCredentials": {
                            "tokenUrl": "https://auth.example.com/oauth/token",
                            "scopes": {"rooms:write": "write rooms"},
                        }
                    },
                },
            }
        },
        "security": [{"ApiKeyAuth": []}, {"bearerAuth": []}],
    },
    {
        "parameters": [
            {"name": "x-api-key", "in": "header", "required": True, "schema": {"type": "string"}},
            {"name": "page_token", "in": "query", "schema": {"type": "string"}},
        ]
    },
    {"api_key": "YOUR_API_KEY", "secret_key": "YOUR_SECRET_KEY_HERE"},
    {"password": None, "passwd": None, "token": None},
    {"password": "", "secret": "", "api_key": ""},
    {"password": "***", "api_key": "********", "token": "<redacted>"},
    {"password": "${DB_PASSWORD}", "token": "${{ secrets.DEPLOY_TOKEN }}"},
    {"api_key": "os.environ['API_KEY']", "secret_key": "settings.SECRET_KEY"},
    {"client_secret": "<client-secret>", "client_id": "web-dashboard"},
    {"token": "string", "refresh_token": "string", "id_token": "string"},
    {"password": {"type": "string", "writeOnly": True, "example": "S3cure!Passw0rd"}},
    {"password_hash": f"pbkdf2_sha256$600000${token(ALNUM, 22, 's2')}$abc", "user_id": 7},
    {"secret_id": "a1b2c3d4", "key_id": UUID4, "token_id": UUID_OTHER},
    {"nextPageToken": _b64url(b"page=2&size=50&sort=-created"), "items": []},
    {"pageToken": _b64url(b"after=" + UUID4.encode()), "total": 1200},
    {"continuation_token": _b64url(b"shard=4;offset=1000"), "has_more": True},
    {"idempotencyKey": UUID4, "requestId": UUID_OTHER},
    {"commit": SHA1, "tree": hashlib.sha1(b"tree").hexdigest(), "parents": [SHA1[::-1]]},
    {"sha256": SHA256, "md5": MD5, "size": 1048576},
    {"digest": f"sha256:{SHA256}", "mediaType": "application/vnd.oci.image.manifest.v1+json"},
    {"etag": MD5, "last_modified": "2026-11-30T10:00:00Z"},
    {"ids": [UUID4, UUID_OTHER, ULID], "cursor": _b64url(b"id>42")},
    {
        "DATABASES": {
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "app",
                "USER": "app",
                "PASSWORD": "env('DB_PASSWORD')",
                "HOST": "db",
            }
        }
    },
    {
        "services": {
            "db": {
                "image": "postgres:16",
                "environment": {"POSTGRES_PASSWORD_FILE": "/run/secrets/db_password"},
                "secrets": ["db_password"],
            }
        }
    },
    {"env": [{"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "api", "key": "key"}}}]},
    {"spring.datasource.password": "${DB_PASSWORD}", "spring.datasource.username": "app"},
    {"auth": {"type": "bearer", "token": "{{token}}"}, "url": "{{baseUrl}}/v1/rooms"},
    {"headers": {"Authorization": "Bearer {{accessToken}}", "Content-Type": "application/json"}},
    {"headers": {"Authorization": "Basic {{credentials}}"}},
    {"max_tokens": 4096, "tokens_used": 1234, "token_count": 88},
    {"keyboard": "qwerty layout", "key": "rooms:plan", "keys": ["a", "b"]},
    {"public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + token(B64, 43, "pk2")},
    {"publishable_key": "pk_live_" + "x" * 24, "note": "publishable keys are not secrets"},
    {"token_type": "Bearer", "expires_in": 3600, "scope": "rooms:read rooms:write"},
    {"password_policy": {"min_length": 12, "require_digit": True}, "password_expiry_days": 90},
    {"api_key_prefix": "rs_live_", "api_key_display": "rs_live_Ab3d…"},
    {"secret": "top-secret", "password": "changeme", "passphrase": "correct horse battery staple"},
    {"credentials": {"type": "service_account", "path": "/etc/gcp/sa.json"}},
    {"npmrc": "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"},
    {"example": {"Authorization": "Bearer <token>", "X-API-Key": "<api-key>"}},
    {"authorization": "Bearer ${TOKEN}", "x-api-key": "${API_KEY}"},
    {"password": "password123", "apiKey": "your-api-key-here"},
]


def benign_payload_of(text: str) -> dict[str, Any]:
    """A plain benign text as the payload of a write_context entry."""
    return {"text": text, "references": ["docs/durable-rooms.md"]}


# --- Credentials in their real formats --------------------------------------------------


@dataclass(frozen=True)
class Credential:
    name: str  # the format, for the report
    text: str  # as an agent would write it
    secret: str  # what must not survive


def _c(name: str, before: str, secret: str, after: str = "") -> Credential:
    return Credential(name, f"{before}{secret}{after}", secret)


_JWT = ".".join(
    _b64url(part)
    for part in (
        b'{"alg":"HS256","typ":"JWT"}',
        b'{"sub":"agent-7","iat":1764000000,"scope":"rooms"}',
        hashlib.sha256(b"jwt-signature").digest(),
    )
)
_PEM_BODY = "\n".join(token(B64, 64, f"pem{i}") for i in range(6))
_PK = "PRIVATE" + " KEY"
_ESCAPED_BODY = _PEM_BODY.replace("\n", "\\n")
_AZ = token(B64, 86, "azure") + "=="
_BASIC = base64.b64encode(b"deploy:" + token(ALNUM, 18, "basic").encode()).decode()
_STATIC = "static-" + token(ALNUM, 24, "static")  # see STATIC_API_KEYS

# The deployment's static keys (settings.API_KEYS) while the corpus is checked.
STATIC_API_KEYS = f"ops:{_STATIC},bench:other-{token(ALNUM, 20, 'static2')}"

CREDENTIALS: list[Credential] = [
    _c("AWS access key id", "aws_access_key_id = ", "AK" + "IA" + token(UPPER_DIGITS, 16, "a1")),
    _c("AWS STS key id", "AWS_ACCESS_KEY_ID=", "AS" + "IA" + token(UPPER_DIGITS, 16, "a2")),
    _c("AWS secret (env)", "AWS_SECRET_ACCESS_KEY=", token(B64, 40, "a3")),
    _c("AWS secret (ini)", "aws_secret_access_key = ", token(B64, 40, "a4"), "\nregion = eu"),
    _c("GitHub ghp_", "export GITHUB_TOKEN=", "gh" + "p_" + token(ALNUM, 36, "g1")),
    _c("GitHub gho_", "oauth: ", "gh" + "o_" + token(ALNUM, 36, "g2")),
    _c("GitHub ghs_", "app token ", "gh" + "s_" + token(ALNUM, 36, "g3"), " expires in 1h"),
    _c(
        "GitHub github_pat_",
        "use ",
        "github" + "_pat_" + token(ALNUM, 22, "g4") + "_" + token(ALNUM, 59, "g5"),
        " for the release job",
    ),
    _c("GitLab glpat-", "GITLAB_TOKEN=", "gl" + "pat-" + token(URLSAFE, 20, "gl")),
    _c(
        "Slack xoxb-",
        "slack bot ",
        "xo"
        + "xb-"
        + token("0123456789", 12, "s1")
        + "-"
        + token("0123456789", 13, "s2")
        + "-"
        + token(ALNUM, 24, "s3"),
    ),
    _c(
        "Slack xoxp-",
        "user token: ",
        "xo"
        + "xp-"
        + "-".join(token("0123456789", 12, f"sp{i}") for i in range(3))
        + "-"
        + token(HEX, 32, "sp"),
    ),
    _c("Slack xoxa-", "legacy ", "xo" + "xa-2-" + token(ALNUM, 40, "sa")),
    _c(
        "Slack webhook",
        "SLACK_WEBHOOK=",
        "https://hooks.slack.com/services/T"
        + token(UPPER_DIGITS, 10, "wt")
        + "/B"
        + token(UPPER_DIGITS, 10, "wb")
        + "/"
        + token(ALNUM, 24, "ww"),
    ),
    _c("Stripe sk_live_", "charge with ", "sk" + "_live_" + token(ALNUM, 99, "st1"), "."),
    _c("Stripe rk_live_", "STRIPE_RESTRICTED=", "rk" + "_live_" + token(ALNUM, 24, "st2")),
    _c(
        "OpenAI sk- (legacy)",
        "OPENAI_API_KEY=",
        "sk-" + token(ALNUM, 20, "o1") + "T3Blbk" + "FJ" + token(ALNUM, 20, "o2"),
    ),
    _c("OpenAI sk-proj-", "key: ", "sk-" + "proj-" + token(URLSAFE, 156, "o3")),
    _c("OpenAI sk- (48)", 'openai.api_key = "', "sk-" + token(ALNUM, 48, "o4"), '"'),
    _c(
        "Anthropic sk-ant-api03-",
        "ANTHROPIC_API_KEY=",
        "sk-" + "ant-api03-" + token(URLSAFE, 93, "an") + "AA",
    ),
    _c("Google AIza", "maps key ", "AI" + "za" + token(URLSAFE, 35, "go"), " (browser)"),
    _c(
        "Google OAuth client secret",
        '"client_secret": "',
        "GOC" + "SPX-" + token(URLSAFE, 28, "gc"),
        '"',
    ),
    _c(
        "Google ya29 access token",
        "Authorization: Bearer ",
        "ya" + "29." + token(URLSAFE, 120, "ya"),
    ),
    _c(
        "RSA private key",
        "deploy key:\n",
        f"-----BEGIN RSA {_PK}-----\n{_PEM_BODY}\n-----END RSA {_PK}-----",
        "\nrotate it monthly",
    ),
    _c(
        "OpenSSH private key",
        "id_ed25519:\n",
        f"-----BEGIN OPENSSH {_PK}-----\n{_PEM_BODY}\n-----END OPENSSH {_PK}-----",
    ),
    _c(
        "PKCS8 key, escaped in JSON",
        '{"private_key": "',
        f"-----BEGIN {_PK}-----\\n{_ESCAPED_BODY}\\n-----END {_PK}-----",
        '"}',
    ),
    _c("JWT", "Authorization: Bearer ", _JWT),
    _c("JWT in a cookie", "Set-Cookie: session=", _JWT, "; HttpOnly"),
    _c("npm npm_", "//registry.npmjs.org/:_authToken=", "np" + "m_" + token(ALNUM, 36, "np")),
    _c("PyPI pypi-", "password = ", "pypi-" + "AgEIcHlwaS5vcmc" + token(URLSAFE, 120, "py")),
    _c("Twilio API key SID", "TWILIO_API_KEY=", "S" + "K" + token(HEX, 32, "tw1")),
    _c("Twilio auth token", "TWILIO_AUTH_TOKEN=", token(HEX, 32, "tw2")),
    _c(
        "SendGrid SG.",
        "SENDGRID_API_KEY=",
        "S" + "G." + token(URLSAFE, 22, "sg1") + "." + token(URLSAFE, 43, "sg2"),
    ),
    _c("Mailgun key-", "MAILGUN_API_KEY=", "ke" + "y-" + token(LOWER_DIGITS, 32, "mg")),
    _c("Mailchimp", "mc ", token(HEX, 32, "mc") + "-us" + "14", " list"),
    _c(
        "Azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;",
        "Account" + "Key=" + _AZ,
        ";EndpointSuffix=core.windows.net",
    ),
    _c(
        "Azure Service Bus connection string",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;",
        "SharedAccess" + "Key=" + token(B64, 43, "sb") + "=",
    ),
    _c(
        "Postgres URL with password",
        "DATABASE_URL=postgres://app:",
        token(ALNUM, 20, "pg"),
        "@db.internal:5432/app",
    ),
    _c(
        "Redis URL with password",
        "REDIS_URL=redis://:",
        token(ALNUM, 32, "rd"),
        "@cache.internal:6379/0",
    ),
    _c(
        "basic-auth URL",
        "clone https://deploy:",
        "pa55" + "w0rdXy" + token(ALNUM, 6, "ba"),
        "@git.example.com/repo.git",
    ),
    _c("Authorization: Basic", "Authorization: Basic ", _BASIC),
    _c(
        "Discord bot token",
        "DISCORD_TOKEN=",
        "M"
        + token(ALNUM, 23, "d1")
        + "."
        + token(URLSAFE, 6, "d2")
        + "."
        + token(URLSAFE, 27, "d3"),
    ),
    _c(
        "Discord webhook",
        "hook: https://discord.com/api/webhooks/1234567890123456789/",
        token(URLSAFE, 68, "dw"),
    ),
    _c("Telegram bot token", "bot ", "6123456789:" + "AA" + token(URLSAFE, 33, "tg"), " talks"),
    _c("Square sq0csp-", "square ", "sq0" + "csp-" + token(URLSAFE, 43, "sq1")),
    _c("Square EAAA", "SQUARE_ACCESS_TOKEN=", "EA" + "AA" + token(URLSAFE, 60, "sq2")),
    _c("Shopify shpat_", "X-Shopify-Access-Token: ", "shp" + "at_" + token(HEX, 32, "sh")),
    _c("Hugging Face hf_", "HF_TOKEN=", "h" + "f_" + token(ALNUM, 34, "hf")),
    _c("DigitalOcean dop_v1_", "DIGITALOCEAN_TOKEN=", "do" + "p_v1_" + token(HEX, 64, "do")),
    _c("Databricks dapi", "DATABRICKS_TOKEN=", "da" + "pi" + token(HEX, 32, "db")),
    _c("Heroku HRKU-", "HEROKU_API_KEY=", "HR" + "KU-" + token(URLSAFE, 60, "hk")),
    _c(
        "Heroku legacy UUID key",
        "HEROKU_API_KEY=",
        str(uuid.UUID(bytes=hashlib.md5(b"hk").digest())),
    ),
    _c("Artifactory AKCp", "artifactory ", "AK" + "Cp" + token(ALNUM, 69, "af")),
    _c("Atlassian ATATT", "JIRA_API_TOKEN=", "ATA" + "TT3x" + token(URLSAFE, 180, "at")),
    _c("Vault hvs.", "VAULT_TOKEN=", "hv" + "s." + token(URLSAFE, 90, "va")),
    _c(
        "Grafana glsa_",
        "GRAFANA_TOKEN=",
        "gl" + "sa_" + token(ALNUM, 32, "gf") + "_" + token(HEX, 8, "gf2"),
    ),
    _c("Linear lin_api_", "LINEAR_API_KEY=", "lin" + "_api_" + token(ALNUM, 40, "li")),
    _c(
        "Postman PMAK-",
        "postman ",
        "PM" + "AK-" + token(HEX, 24, "pm1") + "-" + token(HEX, 34, "pm2"),
    ),
    _c("Doppler dp.pt.", "DOPPLER_TOKEN=", "dp" + ".pt." + token(ALNUM, 43, "dp")),
    _c("New Relic NRAK-", "NEW_RELIC_API_KEY=", "NR" + "AK-" + token(UPPER_DIGITS, 27, "nr")),
    _c("Sentry sntrys_", "SENTRY_AUTH_TOKEN=", "sntr" + "ys_" + token(B64, 120, "se")),
    _c("Supabase sbp_", "supabase login --token ", "sb" + "p_" + token(HEX, 40, "su")),
    _c(
        "Azure SAS URL",
        "https://acme.blob.core.windows.net/backups?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2026-12-31"
        "T00:00:00Z&sig=",
        token(ALNUM, 40, "sas") + "%2B" + token(ALNUM, 8, "sas2") + "%3D",
    ),
    _c("opaque bearer token", "Authorization: Bearer ", token(URLSAFE, 40, "opaque")),
    _c("age secret key", "", "AGE-SECRET" + "-KEY-1" + token(UPPER_DIGITS, 58, "age")),
    _c(
        "password keyword (quoted)",
        'db.connect(password = "',
        "c0rrect-h0rse-" + token(ALNUM, 6, "pw"),
        '", host="db")',
    ),
    _c("password keyword (YAML)", "  password: ", "Vx7-" + token(ALNUM, 14, "yaml")),
    _c("client secret (JSON text)", '{"client_secret": "', token(URLSAFE, 40, "cs"), '"}'),
    _c(
        "Roomservice rs_live_",
        "the key is ",
        "rs" + "_live_" + token(URLSAFE, 43, "rs1"),
        ", keep it",
    ),
    _c("Roomservice rs_live_ glued", "x", "rs" + "_live_" + token(URLSAFE, 43, "rs2")),
    _c("Roomservice rs_inv_", "invite: ", "rs" + "_inv_" + token(URLSAFE, 43, "rs3")),
    _c("Roomservice rs_share_", "share link ?t=", "rs" + "_share_" + token(URLSAFE, 43, "rs4")),
    _c("Roomservice rs_join_", "join with ", "rs" + "_join_" + token(URLSAFE, 43, "rs5")),
    _c("Roomservice whsec_", "webhook secret ", "wh" + "sec_" + token(URLSAFE, 43, "rs6")),
    # Our own keys spelled with escapes (issue 31, P4): in a URL's query, in JSON as text.
    _c(
        "Roomservice rs_live_ URL-encoded",
        "GET /hook?key=",
        ("rs" + "_live_" + token(URLSAFE, 43, "rs7")).replace("_", "%5F"),
        "&room=demo",
    ),
    _c(
        "Roomservice rs_inv_ URL-encoded, lowercase",
        "?k=",
        ("rs" + "_inv_" + token(URLSAFE, 43, "rs8")).replace("_", "%5f").replace("-", "%2d"),
    ),
    _c(
        "Roomservice rs_live_ JSON-escaped",
        '{"key": "',
        ("rs" + "_live_" + token(URLSAFE, 43, "rs9")).replace("_", "\\u005f"),
        '"}',
    ),
    _c("static API_KEYS secret", "ROOMSERVICE_KEY=", _STATIC),
    _c("static API_KEYS secret glued", "Bearer", _STATIC),
]

# Credentials as structured payloads: the value under its key, and the secret.
CREDENTIAL_PAYLOADS: list[tuple[str, dict[str, Any], str]] = [
    (name, {"note": "creds", "config": {key: secret}}, secret)
    for name, key, secret in (
        ("password value", "password", "hunter2-" + token(ALNUM, 10, "p1")),
        ("DB_PASSWORD value", "DB_PASSWORD", token(ALNUM + "!#%", 16, "p2")),
        ("api_key value", "api_key", token(ALNUM, 32, "p3")),
        ("apiKey value", "apiKey", token(HEX, 40, "p4")),
        ("client-secret value", "client-secret", token(URLSAFE, 40, "p5")),
        ("aws secret value", "aws_secret_access_key", token(B64, 40, "p6")),
        ("github token value", "token", "gh" + "p_" + token(ALNUM, 36, "p7")),
        (
            "private key value",
            "private_key",
            f"-----BEGIN EC {_PK}-----\n{_PEM_BODY}\n-----END EC {_PK}-----",
        ),
    )
]


def corpus_sizes() -> dict[str, int]:
    return {
        "benign texts": len(BENIGN_TEXTS),
        "benign payloads": len(BENIGN_PAYLOADS),
        "credentials": len(CREDENTIALS),
        "credential payloads": len(CREDENTIAL_PAYLOADS),
        "credential formats": len({c.name for c in CREDENTIALS}),
    }


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)

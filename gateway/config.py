"""Process configuration: environment variables, optionally a TOML file with the same keys.

Every configuration key (the variables of docs/environment.md) is a field here.
Environment variables win over the TOML file, and an invalid value stops the process at start
with a message that names the variable.
"""

from __future__ import annotations

import os
import tomllib
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from gateway.webchat.origins import web_origin
from outbound.policy import FetchPolicy, parse_allow

CONFIG_FILE_ENV = "RELAYDESK_CONFIG"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./relaydesk.db"


Network = IPv4Network | IPv6Network
# A comma-separated list in the environment ("10.0.0.0/8, 127.0.0.1"), a list in TOML.
CommaList = Annotated[tuple[str, ...], NoDecode]


def split_commas(value: object) -> object:
    """An environment value "a, b" as ("a", "b"); lists and tuples pass through."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class ConfigError(Exception):
    """The configuration cannot be used; the message names the offending key."""


def _config_file() -> Path | None:
    raw = os.environ.get(CONFIG_FILE_ENV)
    return Path(raw) if raw else None


class Settings(BaseSettings):
    """Everything a Relaydesk process reads from its environment."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    # postgresql+asyncpg://user:password@host:5432/db, or the embedded SQLite file (one process).
    database_url: str = Field(DEFAULT_DATABASE_URL, alias="RELAYDESK_DATABASE_URL")
    # redis://[:password@]host:6379/0: shared locks, wake-ups and jobs between processes.
    redis_url: str | None = Field(None, alias="RELAYDESK_REDIS_URL")
    # The address and port `relaydesk serve` listens on.
    host: str = Field("127.0.0.1", alias="RELAYDESK_HOST")
    port: int = Field(8080, alias="RELAYDESK_PORT", ge=1, le=65535)
    # The https URL customers and providers reach this deployment at (Twilio signs it).
    public_url: str | None = Field(None, alias="RELAYDESK_PUBLIC_URL")
    # Bearer key of /v1/* and the operator API (unset: every call refused).
    api_key: SecretStr | None = Field(None, alias="RELAYDESK_API_KEY")
    # Verifies web chat identity tokens from the business site (and derives the visitor key).
    webchat_secret: SecretStr | None = Field(None, alias="RELAYDESK_WEBCHAT_SECRET")
    # Signs web chat visitor ids (gateway/webchat/visitors.py); unset: derived from the web chat
    # secret, else kept in a file beside a SQLite database, else made at start.
    webchat_visitor_key: SecretStr | None = Field(None, alias="RELAYDESK_WEBCHAT_VISITOR_KEY")
    # Where conversation and message events are posted (unset: none are kept), and the key
    # that signs their bodies (HMAC-SHA256).
    events_url: str | None = Field(None, alias="RELAYDESK_EVENTS_URL")
    events_secret: SecretStr | None = Field(None, alias="RELAYDESK_EVENTS_SECRET")
    # Signs the identity assertion every action call carries (`gateway.tools.assertion`):
    # HS256 with the shared key, EdDSA with the private key (PEM, Ed25519; its public key is
    # served at /.well-known/jwks.json). Neither set: no action is called.
    tool_identity_key: SecretStr | None = Field(None, alias="RELAYDESK_TOOL_IDENTITY_KEY")
    tool_identity_private_key: SecretStr | None = Field(
        None, alias="RELAYDESK_TOOL_IDENTITY_PRIVATE_KEY"
    )
    # The model answering: offline, openai:<model> or anthropic:<model>, its base URL and key.
    model: str = Field("offline", alias="RELAYDESK_MODEL")
    model_base_url: str | None = Field(None, alias="RELAYDESK_MODEL_BASE_URL")
    model_api_key: SecretStr | None = Field(None, alias="RELAYDESK_MODEL_API_KEY")
    # Model calls waiting at once in one process (they are I/O: hundreds cost little), and each
    # provider's limits per process (its concurrency and requests-per-minute quotas).
    model_concurrency: int = Field(256, alias="RELAYDESK_MODEL_CONCURRENCY", ge=1)
    model_max_in_flight: int | None = Field(None, alias="RELAYDESK_MODEL_MAX_IN_FLIGHT", ge=1)
    model_requests_per_minute: int | None = Field(
        None, alias="RELAYDESK_MODEL_REQUESTS_PER_MINUTE", ge=1
    )
    # Voice notes: the transcription model (OpenAI-compatible), its base URL and key.
    transcriber_model: str | None = Field(None, alias="RELAYDESK_TRANSCRIBER_MODEL")
    transcriber_base_url: str | None = Field(None, alias="RELAYDESK_TRANSCRIBER_BASE_URL")
    transcriber_api_key: SecretStr | None = Field(None, alias="RELAYDESK_TRANSCRIBER_API_KEY")
    # Text embeddings (docs/retrieval.md): offline (the bundled multilingual e5 model, on the
    # CPU), openai (an OpenAI-compatible /embeddings endpoint) or off (lexical ranking only).
    embeddings_provider: Literal["off", "offline", "openai"] = Field(
        "offline", alias="RELAYDESK_EMBEDDINGS_PROVIDER"
    )
    # The endpoint's base URL with its version path (unset: OpenAI's), its model and key.
    embeddings_url: str | None = Field(None, alias="RELAYDESK_EMBEDDINGS_URL")
    embeddings_model: str = Field(
        "text-embedding-3-small", alias="RELAYDESK_EMBEDDINGS_MODEL", min_length=1
    )
    embeddings_api_key: SecretStr | None = Field(None, alias="RELAYDESK_EMBEDDINGS_API_KEY")
    # Texts sent in one request, and requests in flight at once (per process).
    embeddings_batch: int = Field(64, alias="RELAYDESK_EMBEDDINGS_BATCH", ge=1, le=2048)
    embeddings_concurrency: int = Field(4, alias="RELAYDESK_EMBEDDINGS_CONCURRENCY", ge=1)
    # What questions and stored texts start with for models trained so (e5 behind vLLM or TEI:
    # "query: " and "passage: "); the offline model adds its own.
    embeddings_query_prefix: str = Field("", alias="RELAYDESK_EMBEDDINGS_QUERY_PREFIX")
    embeddings_passage_prefix: str = Field("", alias="RELAYDESK_EMBEDDINGS_PASSAGE_PREFIX")
    # OpenMP threads of the offline model (one leaves the other cores to the replies).
    embeddings_threads: int = Field(1, alias="RELAYDESK_EMBEDDINGS_THREADS", ge=1)
    # The largest request body accepted (413 beyond); keep in step with the proxy's limit.
    max_body_bytes: int = Field(1_048_576, alias="RELAYDESK_MAX_BODY_BYTES", ge=1024)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", alias="RELAYDESK_LOG_LEVEL"
    )
    # Loggers at a level of their own, as name=LEVEL ("httpx=DEBUG, relaydesk.access=WARNING"):
    # third-party loggers log only WARNING and above unless named here.
    log_levels: CommaList = Field((), alias="RELAYDESK_LOG_LEVELS")
    # The country of phone numbers written without one (ISO 3166 alpha-2).
    default_region: str = Field("BR", alias="RELAYDESK_DEFAULT_REGION", min_length=2, max_length=2)
    # Migrate the schema at start (unset: only the embedded SQLite does; run `relaydesk migrate`).
    auto_migrate: bool | None = Field(None, alias="RELAYDESK_AUTO_MIGRATE")
    # Store acknowledged webhooks' messages and answer turns in this process. `relaydesk serve
    # --workers N` sets it false in its N gateway processes (they only acknowledge, and wake
    # the background process it runs beside them at a lower CPU priority).
    run_background: bool = Field(True, alias="RELAYDESK_RUN_BACKGROUND")
    # The gateway compacts memory in-process too; set false where `relaydesk worker` does it.
    run_compaction: bool = Field(True, alias="RELAYDESK_RUN_COMPACTION")
    # The Redis stream of compaction jobs (one per deployment sharing a Redis database) and how
    # long a job may stay unacknowledged by a consumer before another worker takes it over.
    compaction_stream: str = Field(
        "relaydesk:compaction", alias="RELAYDESK_COMPACTION_STREAM", min_length=1
    )
    compaction_reclaim_ms: int = Field(60_000, alias="RELAYDESK_COMPACTION_RECLAIM_MS", ge=1_000)
    # Where in Redis the console login throttle counts attempts (one per deployment sharing a
    # Redis database: a shared prefix shares the counts).
    login_attempts_prefix: str = Field(
        "relaydesk:login", alias="RELAYDESK_LOGIN_ATTEMPTS_PREFIX", min_length=1
    )
    # How long a process may hold acknowledged webhooks it is storing before another process
    # takes them over (it died): a stopped process's messages wait this long at most.
    inbox_lease_s: float = Field(30.0, alias="RELAYDESK_INBOX_LEASE_S", ge=1.0)
    # Where `relaydesk background` and `relaydesk worker` keep their heartbeat files, read by
    # `relaydesk health background|worker` (gateway/runtime/heartbeat.py).
    heartbeat_dir: Path = Field(Path("/tmp/relaydesk"), alias="RELAYDESK_HEARTBEAT_DIR")

    # WhatsApp through Twilio: the account, its auth token (signs webhooks) and the sender.
    twilio_account_sid: str | None = Field(None, alias="TWILIO_ACCOUNT_SID")
    twilio_auth_token: SecretStr | None = Field(None, alias="TWILIO_AUTH_TOKEN")
    twilio_whatsapp_from: str | None = Field(None, alias="TWILIO_WHATSAPP_FROM")
    twilio_api_base: str | None = Field(None, alias="TWILIO_API_BASE")
    # Telegram: the bot's token from BotFather and the secret its webhook is registered with.
    telegram_bot_token: SecretStr | None = Field(None, alias="TELEGRAM_BOT_TOKEN")
    telegram_webhook_secret: SecretStr | None = Field(None, alias="TELEGRAM_WEBHOOK_SECRET")
    telegram_api_base: str | None = Field(None, alias="TELEGRAM_API_BASE")
    # Meta's WhatsApp Cloud API, beside or instead of Twilio (one business number each).
    whatsapp_cloud_api_base: str = Field(
        "https://graph.facebook.com/v21.0", alias="WHATSAPP_CLOUD_API_BASE"
    )
    whatsapp_cloud_verify_token: SecretStr | None = Field(None, alias="WHATSAPP_CLOUD_VERIFY_TOKEN")
    whatsapp_cloud_app_secret: SecretStr | None = Field(None, alias="WHATSAPP_CLOUD_APP_SECRET")
    whatsapp_cloud_access_token: SecretStr | None = Field(None, alias="WHATSAPP_CLOUD_ACCESS_TOKEN")
    whatsapp_cloud_phone_number_id: str | None = Field(None, alias="WHATSAPP_CLOUD_PHONE_NUMBER_ID")
    # PostgreSQL cuts a statement running longer than this, and a session idle inside a
    # transaction this long, so one stuck query never holds a pooled connection (0: no limit).
    db_statement_timeout_ms: int = Field(30_000, alias="RELAYDESK_DB_STATEMENT_TIMEOUT_MS", ge=0)
    db_idle_in_transaction_timeout_ms: int = Field(
        60_000, alias="RELAYDESK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS", ge=0
    )
    # How often the background work deletes what tenants' retention no longer keeps.
    retention_interval_s: float = Field(3600.0, alias="RELAYDESK_RETENTION_INTERVAL_S", gt=0)
    # Knowledge documents fetched from a URL are read again once their last read is this old
    # (a conditional fetch: unchanged pages cost a 304); 0 leaves them to on-demand syncs.
    knowledge_resync_s: float = Field(21600.0, alias="RELAYDESK_KNOWLEDGE_RESYNC_S", ge=0)
    # A slow client is dropped: a connection gets this long (from its start, or from the previous
    # answer on a kept-alive one) to send a complete request head, and a request this long from
    # its head to the end of its body. Web chat sockets and event streams are not cut.
    header_timeout_s: float = Field(10.0, alias="RELAYDESK_HEADER_TIMEOUT_S", gt=0)
    body_timeout_s: float = Field(30.0, alias="RELAYDESK_BODY_TIMEOUT_S", gt=0)
    # `/metrics` asks for `Authorization: Bearer <token>` when set (unset: open, as before).
    metrics_token: SecretStr | None = Field(None, alias="RELAYDESK_METRICS_TOKEN")
    # How long the hashed provider ids of erased messages are kept, so a provider's late retry
    # of one is acknowledged and dropped, not stored again (the longest retry window).
    erasure_tombstone_days: int = Field(7, alias="RELAYDESK_ERASURE_TOMBSTONE_DAYS", ge=1)
    # Peers whose X-Forwarded-For / X-Forwarded-Proto are believed (the reverse proxy in front):
    # CIDRs or addresses. Empty: every client is the connection's peer.
    trusted_proxies: CommaList = Field((), alias="RELAYDESK_TRUSTED_PROXIES")
    # Sites that may frame the web chat widget and hand it an identity token, as origins
    # ("https://shop.example.com"). Empty: no other site may frame it.
    webchat_allowed_origins: CommaList = Field((), alias="RELAYDESK_WEBCHAT_ALLOWED_ORIGINS")
    # What the deployment runs itself that fetches of URLs others chose (attachments, media,
    # vCards) and event posts may reach though it is not public: hostnames or CIDRs.
    fetch_allow: CommaList = Field((), alias="RELAYDESK_FETCH_ALLOW")

    @field_validator("trusted_proxies", "webchat_allowed_origins", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            try:
                ip_network(item, strict=False)
            except ValueError as exc:
                raise ValueError(f"{item!r} is not an address or CIDR network") from exc
        return value

    @field_validator("webchat_allowed_origins")
    @classmethod
    def _origins(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(web_origin(item) for item in value))

    @field_validator("log_levels", mode="before")
    @classmethod
    def _log_levels_list(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("log_levels")
    @classmethod
    def _log_levels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            name, _, level = item.partition("=")
            if not name.strip() or level.strip().upper() not in LOG_LEVELS:
                raise ValueError(f"{item!r} is not logger=LEVEL ({', '.join(LOG_LEVELS)})")
        return value

    @property
    def logger_levels(self) -> tuple[tuple[str, str], ...]:
        """`RELAYDESK_LOG_LEVELS` as (logger name, level) pairs."""
        pairs = (item.partition("=") for item in self.log_levels)
        return tuple((name.strip(), level.strip().upper()) for name, _, level in pairs)

    @property
    def trusted_proxy_networks(self) -> tuple[Network, ...]:
        return tuple(ip_network(item, strict=False) for item in self.trusted_proxies)

    @field_validator("fetch_allow", mode="before")
    @classmethod
    def _fetch_allow_list(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("fetch_allow")
    @classmethod
    def _fetch_allow_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        parse_allow(value)
        return value

    @property
    def fetch_policy(self) -> FetchPolicy:
        return FetchPolicy.allowing(self.fetch_allow)

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str) -> str:
        scheme = value.split("://", 1)[0]
        if scheme not in {"sqlite+aiosqlite", "postgresql+asyncpg"}:
            raise ValueError(
                "must use an async driver: sqlite+aiosqlite:///… or postgresql+asyncpg://…"
            )
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_scheme(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("webchat_secret", "webchat_visitor_key")
    @classmethod
    def _secret_length(cls, value: SecretStr | None) -> SecretStr | None:
        # HS256 keys shorter than the hash output are refused (RFC 7518 §3.2).
        if value is not None and len(value.get_secret_value().encode()) < 32:
            raise ValueError("must be at least 32 bytes long")
        return value

    @field_validator("events_url")
    @classmethod
    def _endpoint_url(cls, value: str | None) -> str | None:
        # Posted to exactly as given (a base URL loses its trailing slash; an endpoint must not).
        if value in (None, ""):
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("metrics_token")
    @classmethod
    def _metrics_token_length(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value():
            return None  # an empty value is unset
        if value is not None and len(value.get_secret_value().encode()) < 16:
            raise ValueError("must be at least 16 bytes long")
        return value

    @field_validator("events_secret")
    @classmethod
    def _events_secret_length(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value():
            return None  # an empty value is unset (and refused beside a URL)
        if value is not None and len(value.get_secret_value().encode()) < 16:
            raise ValueError("must be at least 16 bytes long")
        return value

    @field_validator("model")
    @classmethod
    def _model_spec(cls, value: str) -> str:
        if value == "offline":
            return value
        provider, _, name = value.partition(":")
        if provider not in {"openai", "anthropic"} or not name:
            raise ValueError("must be 'offline', 'openai:<model>' or 'anthropic:<model>'")
        return value

    @field_validator(
        "public_url",
        "model_base_url",
        "twilio_api_base",
        "telegram_api_base",
        "transcriber_base_url",
        "embeddings_url",
    )
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _background_reachable(self) -> Settings:
        # A process that only acknowledges wakes the background process over Redis.
        if not self.run_background and self.redis_url is None:
            raise ValueError("RELAYDESK_RUN_BACKGROUND=false needs RELAYDESK_REDIS_URL")
        return self

    @model_validator(mode="after")
    def _events_signed(self) -> Settings:
        # Every event is signed: a receiver could not tell ours from anyone's without it.
        if self.events_url is not None and self.events_secret is None:
            raise ValueError("RELAYDESK_EVENTS_URL needs RELAYDESK_EVENTS_SECRET (signs events)")
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def should_auto_migrate(self) -> bool:
        """The embedded SQLite default migrates itself; PostgreSQL only when asked to."""
        return self.is_sqlite if self.auto_migrate is None else self.auto_migrate

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = _config_file()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Read the settings, turning pydantic's report into one `ConfigError` naming each key."""
    path = _config_file()
    if path is not None:
        if not path.is_file():
            raise ConfigError(f"{CONFIG_FILE_ENV}: no such file: {path}")
        try:
            with path.open("rb") as handle:
                tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{CONFIG_FILE_ENV}: {path} is not valid TOML: {exc}") from exc
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join(str(part) for part in error["loc"]) or "configuration"
            problems.append(f"{key}: {error['msg']}")
        raise ConfigError("invalid configuration — " + "; ".join(problems)) from exc
